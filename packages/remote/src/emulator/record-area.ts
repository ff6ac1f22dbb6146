/**
 * The emulated environment's own place for background commands' records.
 *
 * A real sandbox has a `/tmp` of its own; an emulator's commands are the host's processes and
 * share the host's. Records under the default base would then be listed by every emulated
 * environment on the host, two test runs side by side included. So each emulator makes a
 * directory of its own, writable by every account as `/tmp` is, hands its base to the adapters
 * built on it (their `recordBase` option), and removes it when it closes.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A directory for one emulated environment's records. */
export interface RecordArea {
  /** The directory: mode 1777, like `/tmp`. */
  readonly dir: string;
  /** The `recordBase` adapters on this environment use: `${dir}/.sandstream-`. */
  readonly recordBase: string;
  /** Removes the directory and every record in it. */
  remove(): void;
}

/**
 * Makes a record area under the host's temporary directory.
 *
 * @example
 * ```ts
 * import { makeRecordArea } from '@sandstream/remote/emulator';
 * const area = makeRecordArea('envd');
 * // createE2BSandbox({ sandbox, recordBase: area.recordBase }) on the emulator...
 * area.remove();
 * ```
 */
export function makeRecordArea(name: string): RecordArea {
  const dir = mkdtempSync(join(tmpdir(), `sandstream-${name}-tmp-`));
  // Sticky and writable by all: a command run as another account makes its record here too.
  chmodSync(dir, 0o1777);
  return {
    dir,
    recordBase: `${dir}/.sandstream-`,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
