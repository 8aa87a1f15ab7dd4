import type { OpenAPIObject } from '@nestjs/swagger';
import { dump } from 'js-yaml';
import { stringify } from 'lossless-json';

/**
 * The document holds the int64 bounds as bigints: no JS number can write 2^63 - 1, so
 * JSON.stringify, which @nestjs/swagger's own routes use, cannot serve it.
 */
export function openApiJson(document: OpenAPIObject): string {
  return stringify(document) ?? '';
}

const INT64_MARK = /'?__int64__(-?\d+)__'?/g;

export function openApiYaml(document: OpenAPIObject): string {
  return dump(document, {
    noRefs: true,
    replacer: (_key, value: unknown) =>
      typeof value === 'bigint' ? `__int64__${value}__` : value,
  }).replace(INT64_MARK, '$1');
}

/** For Swagger UI's page, which embeds the document with JSON.stringify: bigints as numbers. */
export function withNumbersForBigints(document: OpenAPIObject): OpenAPIObject {
  return JSON.parse(
    JSON.stringify(document, (_key, value: unknown) =>
      typeof value === 'bigint' ? Number(value) : value,
    ),
  ) as OpenAPIObject;
}
