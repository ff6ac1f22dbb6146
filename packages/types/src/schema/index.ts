import { Capability, CapabilityManifest } from './capability.js';
import { CaseResult, CaseStatus, ConformanceReport } from './conformance-report.js';
import { ErrorCode } from './error-code.js';
import { ExecResult } from './exec-result.js';
import { OutputChunk, StreamName } from './output-chunk.js';

export * from './capability.js';
export * from './conformance-report.js';
export * from './error-code.js';
export * from './exec-result.js';
export * from './output-chunk.js';
export { base64ToBytes, bytesToBase64 } from './bytes.js';

/** Every named definition of the spec, in the order the document lists them. */
export const DEFINITIONS = {
  StreamName,
  OutputChunk,
  ExecResult,
  Capability,
  CapabilityManifest,
  ErrorCode,
  CaseStatus,
  CaseResult,
  ConformanceReport,
} as const;
export type DefinitionName = keyof typeof DEFINITIONS;
