import { parse, stringify } from 'lossless-json';
import { parseIntegerText } from './int64';

/** Keys that would reach an object's prototype if a later step copied them. */
const PROTOTYPE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * JSON.parse without losing digits: integers (`5`, `5.0`, `2^63-1`) become bigints, so no id
 * above 2^53 is rounded; other numbers become JS numbers. Prototype keys are dropped.
 */
export function parseLosslessJson(text: string): unknown {
  return parse(
    text,
    (key, value) => (PROTOTYPE_KEYS.has(key) ? undefined : value),
    (numberText) => parseIntegerText(numberText) ?? Number(numberText),
  );
}

/** JSON.stringify that writes bigints as exact JSON numbers. */
export function stringifyLosslessJson(value: unknown): string {
  return stringify(value) ?? '';
}
