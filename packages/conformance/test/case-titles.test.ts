import { describe, expect, test } from 'vitest';
import { CASES } from '../src/engine.js';
import { REQUIREMENTS } from '../src/requirements.js';

/**
 * The quote a title opens with (`"..."` up to its closing double quote and a
 * colon), or undefined. The rule is in the TSDoc of `ConformanceCase.title`.
 */
function openingQuote(title: string): string | undefined {
  return /^"([^"]+)": \S/.exec(title)?.[1];
}

/** A statement or quote as it is compared: without backticks, runs of whitespace as one space. */
function plain(text: string): string {
  return text.replace(/`/g, '').replace(/\s+/g, ' ').trim();
}

const STATEMENTS = new Map(REQUIREMENTS.map((r) => [r.id, plain(r.statement)]));

describe("a case's title quotes the requirement it proves", () => {
  test('the rule reads a quote as written, and only a quote that opens the title', () => {
    expect(openingQuote('"MUST terminate the command before control leaves the loop": `break` out of `for await`')).toBe('MUST terminate the command before control leaves the loop');
    expect(openingQuote('break out of for await terminates the command')).toBeUndefined();
    expect(openingQuote('without "stdin", the operation is refused')).toBeUndefined();
    expect(plain('`stream()` MUST  return\nits Process')).toBe('stream() MUST return its Process');
  });

  test('every title opens with a quote of at least three words, then says what the case checks', () => {
    const without = CASES.filter((c) => {
      const quote = openingQuote(c.title);
      return quote === undefined || quote.trim().split(/\s+/).length < 3;
    });
    expect(without.map((c) => `${c.id}: ${c.title}`), 'open the title with "<words of the requirement>": <what the case checks>').toEqual([]);
  });

  test("every quote is word for word in the statement of one of the case's requirements", () => {
    const misquoted = CASES.filter((c) => {
      const quote = plain(openingQuote(c.title) ?? '');
      return !c.requirements.some((id) => STATEMENTS.get(id)?.includes(quote));
    });
    expect(
      misquoted.map((c) => `${c.id}: "${openingQuote(c.title)}" is not in ${c.requirements.join(', ')}`),
      'quote the statement in src/requirements.ts as it is (backticks left out)',
    ).toEqual([]);
  });
});
