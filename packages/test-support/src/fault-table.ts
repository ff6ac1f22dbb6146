/**
 * The fault matrix written as one table: a cell for every phase × fault,
 * checked complete by the compiler (a table missing a cell, or holding one
 * that is not in the matrix, does not typecheck), and flattened into the
 * cells that `describeMatrix` runs, in the matrix's order.
 *
 * Nothing here is particular to one backend: the type of a backend's fault
 * and the options its cells may add are parameters.
 */
import { FAULTS, PHASES } from './fault-matrix.js';
import type { CellPlan, Expected, FaultName, NotApplicable, Phase } from './fault-matrix.js';

/**
 * A cell that applies: the fault injected (a function of the cell's marker
 * when it must find the cell's own command), how the call must end, the
 * time the fault itself adds, and the options `X` of the backend's cells.
 */
export type AppliedCell<I extends object, X extends object = object> = {
  readonly inject: I | ((mark: string) => I);
  readonly expect: Expected;
  readonly extraMs: number;
} & X;

/** A cell of the table: one that applies, or the reason it does not. */
export type CellSpec<I extends object, X extends object = object> = AppliedCell<I, X> | NotApplicable;

/** Every phase × every fault, exactly: a missing or an extra key is a type error. */
export type FaultTable<S> = { readonly [P in Phase]: { readonly [F in FaultName]: S } };

/** A flattened cell, as `describeMatrix` runs it: the fault built for its marker, or the reason it does not apply. */
export type TableCell<I extends object, X extends object = object> = CellPlan & Partial<X> & { readonly inject: I | NotApplicable };

/**
 * The table's cells in the matrix's order (PHASES × FAULTS), each applied
 * cell's fault built for `mark(phase, fault)`. A cell that does not apply
 * is never run; its plan says `result` and no extra time.
 */
export function cellsOf<I extends object, X extends object>(
  table: FaultTable<CellSpec<I, X>>,
  mark: (phase: Phase, fault: FaultName) => string,
): Array<TableCell<I, X>> {
  const cells: Array<TableCell<I, X>> = [];
  const noOptions: Partial<X> = {};
  for (const phase of PHASES) {
    for (const fault of FAULTS) {
      const spec = table[phase][fault];
      if ('notApplicable' in spec) {
        cells.push({ phase, fault, inject: { notApplicable: spec.notApplicable }, expect: 'result', extraMs: 0, ...noOptions });
        continue;
      }
      const { inject, expect, extraMs, ...options } = spec;
      const built = typeof inject === 'function' ? inject(mark(phase, fault)) : inject;
      cells.push({ phase, fault, inject: built, expect, extraMs, ...(options as Partial<X>) });
    }
  }
  return cells;
}
