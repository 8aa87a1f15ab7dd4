/**
 * Every scope a token can hold: the one list the guard, the CLI and the OpenAPI document read. A
 * new module adds its scopes here. `byDefault` scopes are what `tokens create` grants when
 * `--scopes` is not given; the others must be named.
 */
export const SCOPE_DEFINITIONS = {
  'plants:read': { description: 'list and read plants', byDefault: true },
  'plants:write': { description: 'add and delete plants', byDefault: true },
  'webhooks:manage': {
    description:
      'create, list and delete webhook subscriptions and read their deliveries',
    byDefault: false,
  },
} as const satisfies Record<
  string,
  { description: string; byDefault: boolean }
>;

export type Scope = keyof typeof SCOPE_DEFINITIONS;

export const SCOPES = Object.keys(SCOPE_DEFINITIONS) as Scope[];

export const DEFAULT_SCOPES = SCOPES.filter(
  (scope) => SCOPE_DEFINITIONS[scope].byDefault,
);

export function isScope(value: string): value is Scope {
  return Object.hasOwn(SCOPE_DEFINITIONS, value);
}
