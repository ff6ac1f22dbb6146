/**
 * The one command string the e2b SDK takes (it runs `/bin/bash -l -c
 * <string>`; there is no argv call), made from argv the way a careful user
 * of the SDK would: every element in single quotes, a quote inside one
 * written as `'\''`, the elements joined by spaces.
 */
export function shellLine(argv: readonly string[]): string {
  return argv.map(quote).join(' ');
}

function quote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
