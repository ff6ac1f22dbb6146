// Validators compiled from the committed documents of a revision, as a
// consumer holding only spec/<version>/ would compile them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { specDir } from './paths.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

export interface Reason {
  readonly keyword: string;
  readonly instancePath: string;
}

export interface CommittedValidator {
  (value: unknown): boolean;
  readonly reasons: readonly Reason[];
}

/** The JSON of a committed spec document. */
export function loadDocument(version: string, file = 'schema.json'): { $id: string; $defs: Record<string, unknown> } {
  return JSON.parse(readFileSync(join(specDir(version), file), 'utf8')) as { $id: string; $defs: Record<string, unknown> };
}

/**
 * Compiles a committed document. 1.0 was published compiling under ajv's
 * strict mode without strictTypes; 1.1 on compiles under full strict mode.
 */
export function committedValidators(version: string, file = 'schema.json'): (name: string) => CommittedValidator {
  const document = loadDocument(version, file);
  const ajv = new Ajv2020(version === '1.0' ? { allErrors: true, strict: true, strictTypes: false } : { allErrors: true, strict: true });
  addFormats(ajv);
  ajv.addSchema(document);
  return (name) => {
    const validate: ValidateFunction | undefined = ajv.getSchema(`${document.$id}#/$defs/${name}`);
    if (validate === undefined) throw new Error(`${version}/${file} has no definition ${name}`);
    let reasons: readonly Reason[] = [];
    const check = ((value: unknown) => {
      const ok = validate(value) as boolean;
      reasons = ok ? [] : (validate.errors ?? []).map(({ keyword, instancePath }) => ({ keyword, instancePath }));
      return ok;
    }) as CommittedValidator;
    Object.defineProperty(check, 'reasons', { get: () => reasons });
    return check;
  };
}
