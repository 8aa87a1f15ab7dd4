import { registerAs } from '@nestjs/config';
import { ConfigError } from '../../config/environment';
import { declareSettings, setting } from '../../config/module-settings';
import { identityProviderUrl, jwtAlgorithms } from '../../config/setting-kinds';

const readOidcSettings = declareSettings('oidc', {
  OIDC_ISSUER: setting.of(identityProviderUrl, {
    description:
      "Accept an identity provider's access tokens (JWTs): its issuer URL, exactly as their iss; unset, only the service's own tokens",
    example: 'https://idp.example.com/realms/plants',
  }),
  OIDC_AUDIENCE: setting.text({
    description:
      "With OIDC_ISSUER, required: the audience an access token must name in its aud, this service's identifier at the identity provider",
    example: 'plant-store',
  }),
  OIDC_JWKS_URL: setting.of(identityProviderUrl, {
    description:
      "Where the issuer's signing keys are; unset, the jwks_uri of <OIDC_ISSUER>/.well-known/openid-configuration",
    example: 'https://idp.example.com/realms/plants/certs',
  }),
  OIDC_ALGORITHMS: setting.of(jwtAlgorithms, {
    default: 'RS256,ES256,PS256,EdDSA',
    description:
      'The signature algorithms an access token may use; public-key ones only',
    example: 'ES256',
  }),
  OIDC_CLOCK_TOLERANCE: setting.duration({
    zero: true,
    default: '30s',
    description:
      "How far an access token's exp, nbf and iat may be off this machine's clock",
    example: '5s',
  }),
  OIDC_SCOPE_CLAIM: setting.text({
    description:
      'The claim that holds the scopes, a space-separated string or an array; unset, scope, else scp',
    example: 'roles',
  }),
  OIDC_JWKS_COOLDOWN: setting.duration({
    default: '5s',
    description:
      "The least time between fetches of the issuer's keys; a token with an unknown key id waits up to 5 s for the next",
    example: '30s',
  }),
  OIDC_JWKS_MAX_AGE: setting.duration({
    default: '10m',
    description:
      "The issuer's keys are fetched again once this old, so that a key it dropped stops working",
    example: '1h',
  }),
});

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
  const read = readOidcSettings(env);
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
