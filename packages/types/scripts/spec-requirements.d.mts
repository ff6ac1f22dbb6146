/** One tagged requirement of a spec.md: its id, its statement, and the offset of its tag. */
export interface ExtractedStatement {
  readonly id: string;
  readonly statement: string;
  readonly index: number;
}

/** The statements of every tagged requirement of a spec.md text, in document order. */
export function extractStatements(spec: string): ExtractedStatement[];
