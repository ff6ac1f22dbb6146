/** Counted nouns in the reporters' sentences. */

/** `n` and the noun that agrees with it: "1 case", "2 cases", "1 process", "3 processes". */
export function counted(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}
