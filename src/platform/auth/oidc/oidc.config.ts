import { registerAs } from '@nestjs/config';
import { ConfigError, parseEnvironment } from '../../config/environment';

/** Access tokens of an identity provider (docs/decisions.md, "Identity provider tokens"). */
export interface OidcConfig {
  /** The exact `iss` of its tokens. */
  issuer: string;
  /** What a token's `aud` must contain. */
  audience: string;
  /** Undefined: discovered from the issuer's `/.well-known/openid-configuration`. */
  jwksUrl: string | undefined;
  algorithms: string[];
  clockToleranceMs: number;
  /** Undefined: `scope`, else `scp`. */
  scopeClaim: string | undefined;
  jwksCooldownMs: number;
  jwksMaxAgeMs: number;
}

/** Undefined when OIDC_ISSUER is not set: only the service's own tokens are accepted. */
export function readOidcConfig(env: NodeJS.ProcessEnv): OidcConfig | undefined {
  const read = parseEnvironment(env);
  const issuer = read.OIDC_ISSUER;
  if (issuer === undefined) return undefined;
  const audience = read.OIDC_AUDIENCE;
  if (audience === undefined) {
    throw new ConfigError(
      `OIDC_AUDIENCE must be set with OIDC_ISSUER (${issuer}): the audience this service's access tokens name in their aud`,
    );
  }
  return {
    issuer,
    audience,
    jwksUrl: read.OIDC_JWKS_URL,
    algorithms: read.OIDC_ALGORITHMS,
    clockToleranceMs: read.OIDC_CLOCK_TOLERANCE,
    scopeClaim: read.OIDC_SCOPE_CLAIM,
    jwksCooldownMs: read.OIDC_JWKS_COOLDOWN,
    jwksMaxAgeMs: read.OIDC_JWKS_MAX_AGE,
  };
}

// registerAs wants an object: `{ provider: undefined }` when off
export const oidcConfig = registerAs('oidc', () => ({
  provider: readOidcConfig(process.env),
}));

export type OidcSettings = ReturnType<typeof oidcConfig>;
