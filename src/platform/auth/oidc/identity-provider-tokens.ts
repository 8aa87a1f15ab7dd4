import {
  Inject,
  Injectable,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import {
  createRemoteJWKSet,
  customFetch,
  errors,
  jwtVerify,
  type JWTPayload,
  type RemoteJWKSet,
} from 'jose';
import { isIdentityProviderUrl } from '../../config/setting-kinds';
import { DependencyState } from '../../logging/dependency-state';
import { rejectedAccessTokenMessage } from '../auth-messages';
import { TokenRejection, type Bearer } from '../bearer';
import { ScopeCatalogue } from '../scopes';
import { MAX_TOKEN_LIFETIME, MAX_TOKEN_LIFETIME_MS } from '../tokens.service';
import { oidcConfig, type OidcConfig, type OidcSettings } from './oidc.config';

/** The most a discovery document or a key set may weigh: a real one is a few kilobytes. */
export const MAX_DOCUMENT_BYTES = 512 * 1024;

/** How long a fetch from the identity provider may take, answer and body. */
export const FETCH_TIMEOUT_MS = 5000;

/**
 * How long a token signed by a key newer than those in hand waits for the next fetch of the
 * keys that OIDC_JWKS_COOLDOWN allows: at the default cooldown, always long enough. Identity
 * providers sign with a new key as soon as they publish it (Keycloak, oidc-provider), so such
 * a token is a routine rotation, not a guess.
 */
export const MAX_KEY_WAIT_MS = 5000;

/** `typ` of an access token (RFC 9068), or the plain `JWT` most providers write; any case. */
const ACCESS_TOKEN_TYPES = new Set(['at+jwt', 'application/at+jwt', 'jwt']);

/**
 * The keys were fetched too recently to fetch them again within MAX_KEY_WAIT_MS: the token's
 * kid may be a key published since, so its refusal is the service's own, never a guess.
 */
class KeysFetchedRecently extends Error {
  override readonly name = 'KeysFetchedRecently';
}

/** Why the identity provider's keys are not there: what readiness and the log say. */
export class IdentityProviderUnavailable extends Error {
  override readonly name = 'IdentityProviderUnavailable';
}

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
export class IdentityProviderTokens implements OnApplicationBootstrap {
  private readonly config: OidcConfig | undefined;
  /** Logs the provider's keys going out of reach and coming back, once each. */
  private readonly state = new DependencyState('Identity provider', {
    away: 'is out of reach: its keys cannot be fetched',
    meanwhile:
      'its access tokens are refused unless a key in hand verifies them',
    back: 'is within reach again',
    onReturn: 'its keys are fetched again',
  });
  private keys?: RemoteJWKSet;
  /** When each URL (discovery, keys) was last fetched, for the cooldown. */
  private readonly lastFetchAt = new Map<string, number>();
  /** Why the keys are out of reach, while they are: readiness's message. */
  private problem?: IdentityProviderUnavailable;
  private discovery?: Promise<RemoteJWKSet | undefined>;

  constructor(
    @Inject(oidcConfig.KEY) { provider }: OidcSettings,
    private readonly scopes: ScopeCatalogue,
  ) {
    this.config = provider;
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
  async ready(): Promise<void> {
    const keys = await this.keySet();
    if (!keys) throw this.problem!;
    if (keys.jwks() === undefined) {
      try {
        await keys.reload();
      } catch (error) {
        throw this.unavailable(error);
      }
    }
  }

  /**
   * The caller an access token speaks for; for a token that does not pass, why not: it is its
   * holder's own token, and none of this is secret.
   */
  async verify(token: string): Promise<Bearer | TokenRejection> {
    const config = this.config!;
    const keys = await this.keySet();
    if (!keys) return providerAway(this.problem!);
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
        return providerAway(this.unavailable(error));
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

  /** The key set, once its URL is known (OIDC_JWKS_URL, or discovered from the issuer). */
  private keySet(): Promise<RemoteJWKSet | undefined> {
    if (this.keys) return Promise.resolve(this.keys);
    this.discovery ??= this.discoverKeySet().finally(() => {
      this.discovery = undefined;
    });
    return this.discovery;
  }

  private async discoverKeySet(): Promise<RemoteJWKSet | undefined> {
    const config = this.config!;
    let jwksUrl = config.jwksUrl;
    if (jwksUrl === undefined) {
      const discoveryUrl = `${config.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
      try {
        jwksUrl = jwksUrlOf(
          await this.fetchJson(discoveryUrl, {
            signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
            headers: { accept: 'application/json' },
          }),
          config.issuer,
        );
      } catch (error) {
        this.unavailable(error);
        return undefined;
      }
    }
    this.keys = createRemoteJWKSet(new URL(jwksUrl), {
      timeoutDuration: FETCH_TIMEOUT_MS,
      // every unknown kid asks fetchJson, which keeps the cooldown (and waits it out)
      cooldownDuration: 0,
      cacheMaxAge: config.jwksMaxAgeMs,
      [customFetch]: async (url, options) =>
        Response.json(await this.fetchJson(url, options, isKeySet)),
    });
    return this.keys;
  }

  /**
   * A GET to the provider, for JSON: at most one per URL per OIDC_JWKS_COOLDOWN, whatever its
   * outcome (jose's own cooldown counts from the last success only), 200 only, the body read up
   * to MAX_DOCUMENT_BYTES. A document in the expected shape means the provider is back.
   *
   * Asked again within the cooldown (a kid the keys in hand lack), it waits for the cooldown's
   * end, up to MAX_KEY_WAIT_MS, and fetches then: the callers waiting meanwhile share that one
   * fetch (jose's reload is shared), so made-up kids still cost one fetch per cooldown, and a
   * key the provider published since the last fetch is found rather than refused.
   */
  private async fetchJson(
    url: string,
    options: RequestInit & { signal: AbortSignal },
    isExpected: (document: unknown) => boolean = isObject,
  ): Promise<unknown> {
    const last = this.lastFetchAt.get(url) ?? -Infinity;
    const allowedAt = last + this.config!.jwksCooldownMs;
    const wait = allowedAt - Date.now();
    if (wait > 0) {
      // the provider was away at the last fetch: the keys in hand are all there is
      if (this.problem) throw this.problem;
      if (wait > MAX_KEY_WAIT_MS) {
        throw new KeysFetchedRecently(
          `no key of the identity provider's fetched ${Math.round((Date.now() - last) / 1000)} s ago matches its kid, and they are fetched again in ${Math.ceil(wait / 1000)} s (OIDC_JWKS_COOLDOWN): try again then`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
    this.lastFetchAt.set(url, Date.now());
    let body: Buffer;
    try {
      body = await readBounded(url, options);
    } catch (error) {
      if (error instanceof IdentityProviderUnavailable) throw error;
      throw new IdentityProviderUnavailable(
        `${url}: ${
          (error as Error).name === 'TimeoutError'
            ? `no whole answer within ${FETCH_TIMEOUT_MS / 1000} s`
            : describe(error)
        }`,
      );
    }
    let document: unknown;
    try {
      document = JSON.parse(body.toString('utf8'));
    } catch {
      document = undefined;
    }
    if (!isExpected(document)) {
      throw new IdentityProviderUnavailable(
        `${url} answered something other than the JSON expected`,
      );
    }
    this.problem = undefined;
    this.state.cameBack();
    return document;
  }

  /** Notes why the keys are out of reach; the log says so once an outage (DependencyState). */
  private unavailable(error: unknown): IdentityProviderUnavailable {
    if (this.problem !== undefined && error === this.problem) {
      return this.problem;
    }
    const reason =
      error instanceof IdentityProviderUnavailable
        ? error.message
        : `its key set: ${describe(error)}`;
    this.problem = new IdentityProviderUnavailable(
      `the identity provider's keys are out of reach (${reason})`,
    );
    this.state.wentAway(reason);
    return this.problem;
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

/** A 200's body, up to MAX_DOCUMENT_BYTES. */
async function readBounded(
  url: string,
  options: RequestInit & { signal: AbortSignal },
): Promise<Buffer> {
  const response = await fetch(url, { ...options, redirect: 'manual' });
  if (response.status !== 200) {
    await response.body?.cancel();
    throw new IdentityProviderUnavailable(
      `${url} answered ${response.status}, not 200`,
    );
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of (response.body ??
    []) as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > MAX_DOCUMENT_BYTES) {
      throw new IdentityProviderUnavailable(
        `${url} answered more than ${MAX_DOCUMENT_BYTES / 1024} KiB`,
      );
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** An error's message and its cause's (fetch's own says only "fetch failed"); duck-typed, as fetch's errors come from another realm under jest. */
function describe(error: unknown): string {
  const { message, cause } = (error ?? {}) as {
    message?: unknown;
    cause?: { message?: unknown };
  };
  if (typeof message !== 'string') return String(error);
  return typeof cause?.message === 'string'
    ? `${message}: ${cause.message}`
    : message;
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

function isObject(document: unknown): boolean {
  return typeof document === 'object' && document !== null;
}

function isKeySet(document: unknown): boolean {
  return (
    isObject(document) && Array.isArray((document as { keys: unknown }).keys)
  );
}

/** A failure to get the keys, rather than a token that does not pass. */
function isKeyFetchFailure(error: unknown): boolean {
  // every failure of a fetch is an IdentityProviderUnavailable (fetchJson), but for jose's
  // timeout, and for a key set in JSON that is no key set
  return (
    error instanceof IdentityProviderUnavailable ||
    error instanceof errors.JWKSTimeout ||
    error instanceof errors.JWKSInvalid
  );
}

/** `jwks_uri` of a discovery document, which must be the issuer's own (OpenID Connect Discovery §4.3). */
function jwksUrlOf(document: unknown, issuer: string): string {
  const { issuer: named, jwks_uri: jwksUri } = (document ?? {}) as Record<
    string,
    unknown
  >;
  if (named !== issuer) {
    throw new IdentityProviderUnavailable(
      `its discovery document names the issuer ${JSON.stringify(named)}, not ${issuer}`,
    );
  }
  if (typeof jwksUri !== 'string' || !URL.canParse(jwksUri)) {
    throw new IdentityProviderUnavailable(
      'its discovery document has no jwks_uri URL',
    );
  }
  // the rule OIDC_JWKS_URL is held to: keys over plain http could be anyone's
  if (!isIdentityProviderUrl(jwksUri)) {
    throw new IdentityProviderUnavailable(
      `its discovery document's jwks_uri ${jwksUri} is not https (http is taken on loopback only)`,
    );
  }
  return jwksUri;
}
