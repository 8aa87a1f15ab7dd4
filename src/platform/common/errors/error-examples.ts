import type { ApiResponseExamples } from '@nestjs/swagger';

/**
 * The Error objects an operation answers with one status, one example per kind, for the
 * document (`examples` of an @Api...Response): `{ 'Missing name': 'name is required' }`.
 * The messages are the service's own words, so a reader sees what a client will get.
 */
export function errorExamples(
  status: number,
  kinds: Record<string, string>,
): Record<string, ApiResponseExamples> {
  return Object.fromEntries(
    Object.entries(kinds).map(([summary, message]) => [
      summary.toLowerCase().replace(/[^a-z0-9]+/g, '-'),
      { summary, value: { error: status, message } },
    ]),
  );
}
