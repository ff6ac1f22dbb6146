import { Type, type Static } from '@sinclair/typebox';
import { definition } from './definition.js';

/**
 * The stable `code` of every error the contract defines. Codes never change
 * meaning within a major spec version; match on them, not on messages.
 */
export const ErrorCode = definition(
  'ErrorCode',
  'The stable code carried by every Sandstream error; codes never change meaning within a major version.',
  Type.Union(
    [
      Type.Literal('CAPABILITY_NOT_SUPPORTED'),
      Type.Literal('INVALID_ARGUMENT'),
      Type.Literal('INVALID_STATE'),
      Type.Literal('ABORTED'),
      Type.Literal('SPAWN_FAILED'),
      Type.Literal('STDIN_CLOSED'),
      Type.Literal('CALLBACK_FAILED'),
      Type.Literal('TRANSPORT'),
      Type.Literal('SANDBOX_CLOSED'),
      Type.Literal('COMMAND_NOT_FOUND'),
    ],
  ),
);
export type ErrorCode = Static<typeof ErrorCode>;
