export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

export const INT64_RANGE_MESSAGE = `an integer between ${INT64_MIN} and ${INT64_MAX}`;

const JSON_NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/** Integers longer than this are never int64s, so they are not worth building as bigints. */
const MAX_INTEGER_DIGITS = 20;

/**
 * The exact integer a JSON number's text denotes (`5`, `5.0`, `5e0`, `-0`), or undefined when
 * the text is not an integer or has more than 20 digits.
 */
export function parseIntegerText(text: string): bigint | undefined {
  const match = JSON_NUMBER.exec(text);
  if (!match) return undefined;
  const [, sign, integerDigits, fractionDigits = '', exponentText = '0'] =
    match;
  const significant = (integerDigits + fractionDigits).replace(/^0+/, '');
  if (significant === '') return 0n;
  const trimmed = significant.replace(/0+$/, '');
  const exponent =
    Number(exponentText) -
    fractionDigits.length +
    (significant.length - trimmed.length);
  if (exponent < 0 || trimmed.length + exponent > MAX_INTEGER_DIGITS) {
    return undefined;
  }
  return BigInt(sign + trimmed + '0'.repeat(exponent));
}

export function isInt64(value: unknown): value is bigint {
  return typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX;
}

/** A path or query value written as a plain decimal integer in the int64 range. */
export function parseInt64Text(text: string): bigint | undefined {
  if (!/^-?\d{1,19}$/.test(text)) return undefined;
  const value = BigInt(text);
  return isInt64(value) ? value : undefined;
}
