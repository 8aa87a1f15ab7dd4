/**
 * What a terminal acts on rather than shows: control characters (an escape sequence, a line
 * break), and the invisible format characters and separators (a bidirectional override that
 * reverses what follows it, a zero-width space, U+2028) that make a text read as another.
 */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;

/**
 * Where the first unprintable character of `text` is (its index in characters, as a person
 * counts them, not UTF-16 units), and which it is (`U+202E`).
 */
export function firstUnprintable(
  text: string,
): { at: number; codePoint: string } | undefined {
  UNPRINTABLE.lastIndex = 0;
  const found = UNPRINTABLE.exec(text);
  if (!found) return undefined;
  return {
    at: [...text.slice(0, found.index)].length,
    codePoint: codePointName(found[0]),
  };
}

/** `text` with each unprintable character written as its escape (`\u202e`, `\u{e0001}`). */
export function escapeUnprintable(text: string): string {
  return text.replace(UNPRINTABLE, (character) => {
    const hex = character.codePointAt(0)!.toString(16);
    return hex.length > 4 ? `\\u{${hex}}` : `\\u${hex.padStart(4, '0')}`;
  });
}

function codePointName(character: string): string {
  return `U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}
