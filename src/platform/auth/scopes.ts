import { StartupError } from '../common/errors/startup-error';

/** `<resource>:<verb>`, such as `plants:read`. */
export type Scope = `${string}:${string}`;

export interface ScopeDefinition {
  /** What the scope allows, as the token CLI and the bearerAuth description show it. */
  description: string;
  /** Granted by `tokens create` when `--scopes` is not given; the others must be named. */
  byDefault: boolean;
}

export type ScopeDefinitions = Readonly<Record<Scope, ScopeDefinition>>;

const SCOPE_FORMAT = /^[a-z][a-z0-9-]*:[a-z][a-z0-9-]*$/;

/** The scopes one module declares, with `ScopesModule.forFeature` in its own module file. */
export class DeclaredScopes {
  constructor(readonly definitions: ScopeDefinitions) {}
}

/**
 * Every scope a token can hold, gathered at boot from the modules' declarations: the one list
 * the route check, the token CLI and the OpenAPI document read.
 */
export class ScopeCatalogue {
  private readonly definitions = new Map<Scope, ScopeDefinition>();

  /** One declaration met through two providers (the CLI's context) counts once. */
  constructor(declarations: readonly DeclaredScopes[]) {
    for (const { definitions } of new Set(declarations)) {
      for (const [scope, definition] of Object.entries(definitions)) {
        if (!SCOPE_FORMAT.test(scope)) {
          throw new StartupError(
            `scope "${scope}" is not <resource>:<verb> in lowercase letters, digits and dashes, such as plants:read`,
          );
        }
        if (this.definitions.has(scope as Scope)) {
          throw new StartupError(
            `scope ${scope} is declared by two modules: each scope belongs to one module`,
          );
        }
        this.definitions.set(scope as Scope, definition);
      }
    }
  }

  /** Every scope, in the order the modules declare them. */
  get all(): Scope[] {
    return [...this.definitions.keys()];
  }

  /** What `tokens create` grants when no scopes are named. */
  get defaults(): Scope[] {
    return this.all.filter((scope) => this.definitions.get(scope)!.byDefault);
  }

  has(value: string): value is Scope {
    return this.definitions.has(value as Scope);
  }

  /** `` `plants:read` (list and read plants), ... ``: every scope with what it allows. */
  describe(): string {
    return [...this.definitions]
      .map(([scope, { description }]) => `\`${scope}\` (${description})`)
      .join(', ');
  }
}
