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

/** An absent optional field is left out, never written as null (docs/decisions.md, "name and tag"). */
const omitNullMembers = (_key: string, value: unknown) =>
  value === null ? undefined : value;

/**
 * JSON written already, by a writer that writes as stringifyLosslessJson does (a page of a
 * list, whose rows were written as they were measured; an answer recorded under an
 * `Idempotency-Key`): an answer sends its text as it is, with its headers and status
 * (lossless-json-response.ts).
 */
export class JsonText {
  constructor(
    readonly text: string,
    /** Headers of the answer that carries it (a resource's `ETag`, say). */
    readonly headers?: Readonly<Record<string, string>>,
    /** The answer's status, when it is not the route's: a recorded answer's, replayed. */
    readonly status?: number,
  ) {}

  /** `value` written as every answer writes it, carrying `headers` (`ETag`, `Location`). */
  static of(
    value: unknown,
    headers?: Readonly<Record<string, string>>,
  ): JsonText {
    return new JsonText(stringifyLosslessJson(value), headers);
  }

  /** The same text and status, with `headers` too. */
  with(headers: Readonly<Record<string, string>>): JsonText {
    return new JsonText(
      this.text,
      { ...this.headers, ...headers },
      this.status,
    );
  }
}

/**
 * JSON.stringify that writes bigints as exact JSON numbers and leaves out object members whose
 * value is null: the one place where absent fields are dropped from every answer and every
 * webhook body. (In an array, null stays null, as in JSON.stringify.) A JsonText is its text.
 */
export function stringifyLosslessJson(value: unknown): string {
  if (value instanceof JsonText) return value.text;
  return stringify(value, omitNullMembers) ?? '';
}

/** `T` as it is written: its members that may be null are optional instead. */
export type WithoutNulls<T> = {
  [Key in keyof T as null extends T[Key] ? never : Key]: T[Key];
} & {
  [Key in keyof T as null extends T[Key] ? Key : never]?: Exclude<T[Key], null>;
};

/**
 * A row as answers and events write it: its null members left out, as stringifyLosslessJson
 * leaves them out, and typed so (an event's payload is the resource's DTO, whose field that
 * may be null is optional).
 */
export function withoutNulls<T extends object>(row: T): WithoutNulls<T> {
  return Object.fromEntries(
    Object.entries(row).filter(([, value]) => value !== null),
  ) as WithoutNulls<T>;
}
