import {
  Inject,
  Injectable,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { errors, jwtVerify, type JWTPayload } from 'jose';
import { rejectedAccessTokenMessage } from '../auth-messages';
import { TokenRejection, type Bearer } from '../bearer';
import { ScopeCatalogue } from '../scopes';
import { MAX_TOKEN_LIFETIME, MAX_TOKEN_LIFETIME_MS } from '../tokens.service';
import {
  IdentityProviderKeys,
  isKeyFetchFailure,
  KeysFetchedRecently,
  type IdentityProviderUnavailable,
} from './identity-provider-keys';
import { oidcConfig, type OidcConfig, type OidcSettings } from './oidc.config';

/** `typ` of an access token (RFC 9068), or the plain `JWT` most providers write; any case. */
const ACCESS_TOKEN_TYPES = new Set(['at+jwt', 'application/at+jwt', 'jwt']);

/**
 * Access tokens of the identity provider that OIDC_ISSUER names, checked as
 * docs/decisions.md, "Identity provider tokens" says: JWTs signed by one of its keys (its
 * JWKS), for this service's audience, within their lifetime. Its keys are fetched at boot
 * without holding the boot up, kept for OIDC_JWKS_MAX_AGE, and fetched again for an unknown
 * key id; never more often than once per OIDC_JWKS_COOLDOWN, so that tokens made up by anyone
 * cannot make the service hammer the provider, a token with an unknown kid waiting for the
 * next fetch rather than being refused. A token that cannot be checked, for whatever
 * reason, the provider's included, is no token (401), never a 5xx.
 */
@Injectable()
export class IdentityProviderTokensService implements OnApplicationBootstrap {
  private readonly config: OidcConfig | undefined;
  /** The provider's keys, when OIDC_ISSUER names one. */
  private readonly keys: IdentityProviderKeys | undefined;

  constructor(
    @Inject(oidcConfig.KEY) { provider }: OidcSettings,
    private readonly scopes: ScopeCatalogue,
  ) {
    this.config = provider;
    this.keys = provider && new IdentityProviderKeys(provider);
  }

  get enabled(): boolean {
    return this.config !== undefined;
  }

  onApplicationBootstrap(): void {
    // in the background: a provider that is down must not keep the service from starting
    if (this.config) void this.ready().catch(() => undefined);
  }

  /**
   * Whether the provider's keys are at hand, fetching them if they never were.
   * @throws IdentityProviderUnavailable, saying what is wrong, until they are
   */
  ready(): Promise<void> {
    return this.keys!.ready();
  }

  /**
   * The caller an access token speaks for; for a token that does not pass, why not: it is its
   * holder's own token, and none of this is secret.
   */
  async verify(token: string): Promise<Bearer | TokenRejection> {
    const config = this.config!;
    const keys = await this.keys!.keySet();
    if (!keys) return providerAway(this.keys!.problem!);
    try {
      const { payload, protectedHeader } = await jwtVerify(token, keys, {
        issuer: config.issuer,
        audience: config.audience,
        algorithms: config.algorithms,
        clockTolerance: config.clockToleranceMs / 1000,
        requiredClaims: ['exp', 'sub'],
      });
      if (!ACCESS_TOKEN_TYPES.has(protectedHeader.typ?.toLowerCase() ?? '')) {
        return new TokenRejection(
          rejectedAccessTokenMessage(
            `its typ is ${JSON.stringify(protectedHeader.typ)}, not at+jwt or JWT`,
          ),
        );
      }
      const problem = claimProblemOf(payload, config);
      if (problem !== undefined) {
        return new TokenRejection(rejectedAccessTokenMessage(problem));
      }
      const scopes = this.scopesOf(payload);
      if (typeof scopes === 'string') {
        return new TokenRejection(rejectedAccessTokenMessage(scopes));
      }
      return { caller: `jwt:${payload.sub}@${config.issuer}`, scopes };
    } catch (error) {
      if (isKeyFetchFailure(error))
        return providerAway(this.keys!.unavailable(error));
      if (error instanceof KeysFetchedRecently) {
        return new TokenRejection(
          rejectedAccessTokenMessage(error.message),
          false,
        );
      }
      return new TokenRejection(
        rejectedAccessTokenMessage(rejectionOf(error, config)),
      );
    }
  }

  /**
   * The scopes of the claim that holds them, those the service knows (the rest are ignored); or
   * what is wrong with that claim. `scope` is a space-separated string (RFC 9068); `scp` and a
   * claim named by OIDC_SCOPE_CLAIM may also be an array of strings. A claim in another shape
   * refuses the token rather than fall back on another claim.
   */
  private scopesOf(payload: JWTPayload): string[] | string {
    const named = this.config!.scopeClaim;
    const claim = named ?? ('scope' in payload ? 'scope' : 'scp');
    const value = payload[claim];
    if (value === undefined) return [];
    const listed =
      typeof value === 'string'
        ? value.split(' ')
        : claim !== 'scope' &&
            Array.isArray(value) &&
            value.every((item) => typeof item === 'string')
          ? value
          : undefined;
    if (listed === undefined) {
      return claim === 'scope'
        ? 'its scope claim is not a space-separated string'
        : `its ${claim} claim is not a space-separated string or an array of strings`;
    }
    return listed.filter((scope) => this.scopes.has(scope));
  }
}

/**
 * What jose leaves unchecked: a subject that is a non-empty string (a number would name the
 * caller of the string of its digits, RFC 7519 makes it a string), an `iat` that is not in
 * the future, within the clock tolerance, and an `exp` within the ten years a token of the
 * service's own may live (MAX_TOKEN_LIFETIME_MS): `exp: 1e300` is no lifetime.
 */
function claimProblemOf(
  payload: JWTPayload,
  config: OidcConfig,
): string | undefined {
  if (typeof payload.sub !== 'string' || payload.sub === '') {
    return 'its sub claim is not a non-empty string';
  }
  if (
    typeof payload.iat === 'number' &&
    payload.iat * 1000 > Date.now() + config.clockToleranceMs
  ) {
    return 'it was issued in the future (iat)';
  }
  if (
    typeof payload.exp === 'number' &&
    payload.exp * 1000 > Date.now() + MAX_TOKEN_LIFETIME_MS
  ) {
    return `it expires more than ${MAX_TOKEN_LIFETIME} (ten years) from now (exp)`;
  }
  return undefined;
}

/** A token refused because the provider's keys are out of reach: nobody's guess. */
function providerAway(problem: IdentityProviderUnavailable): TokenRejection {
  return new TokenRejection(rejectedAccessTokenMessage(problem.message), false);
}

/** What is wrong with a token that jose refused. */
function rejectionOf(error: unknown, config: OidcConfig): string {
  if (error instanceof errors.JWTExpired) return 'it has expired';
  if (error instanceof errors.JWTClaimValidationFailed) {
    switch (error.claim) {
      case 'iss':
        return `its iss is not ${config.issuer}`;
      case 'aud':
        return `its aud does not name ${config.audience}`;
      case 'nbf':
        return 'it is not valid yet (nbf)';
      default:
        return `its ${error.claim} claim ${error.reason === 'missing' ? 'is missing' : 'is not valid'}`;
    }
  }
  if (error instanceof errors.JOSEAlgNotAllowed) {
    return `its alg is not one of ${config.algorithms.join(', ')} (OIDC_ALGORITHMS)`;
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return 'its signature does not verify';
  }
  if (error instanceof errors.JWKSNoMatchingKey) {
    return "no key of the identity provider's matches its kid";
  }
  if (error instanceof errors.JWKSMultipleMatchingKeys) {
    return 'it names no kid, and more than one key of the identity provider fits it';
  }
  return 'it is not a JWT';
}
