/** Each program: its constant's name in src/generated/programs.ts, its file under src/sh/, and what it is. */
export const PROGRAMS: ReadonlyArray<readonly [name: string, file: string, what: string]>;

/** Where the generated module is. */
export const GENERATED: URL;

/** The lines of a program's file as embedded: its sourced pieces spliced in, without comments, blank lines or indentation. */
export function embedLines(file: string, from?: readonly string[]): string[];

/** The text of src/generated/programs.ts. */
export function renderPrograms(): string;
