import {
  createRemoteJWKSet,
  customFetch,
  errors,
  type RemoteJWKSet,
} from 'jose';
import { isIdentityProviderUrl } from '../../config/setting-kinds';
import { DependencyState } from '../../logging/dependency-state';
import type { OidcConfig } from './oidc.config';

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

/**
 * The keys were fetched too recently to fetch them again within MAX_KEY_WAIT_MS: the token's
 * kid may be a key published since, so its refusal is the service's own, never a guess.
 */
export class KeysFetchedRecently extends Error {
  override readonly name = 'KeysFetchedRecently';
}

/** Why the identity provider's keys are not there: what readiness and the log say. */
export class IdentityProviderUnavailable extends Error {
  override readonly name = 'IdentityProviderUnavailable';
}

/**
 * The identity provider's keys (its JWKS), at the URL OIDC_JWKS_URL names or its discovery
 * document gives: fetched at boot, kept for OIDC_JWKS_MAX_AGE, fetched again for an unknown key
 * id, never more often than once per OIDC_JWKS_COOLDOWN, so that tokens made up by anyone
 * cannot make the service hammer the provider. Its going out of reach and coming back are
 * logged once each.
 */
export class IdentityProviderKeys {
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
  private outage?: IdentityProviderUnavailable;
  private discovery?: Promise<RemoteJWKSet | undefined>;

  constructor(private readonly config: OidcConfig) {}

  /** Why the keys are out of reach, while they are. */
  get problem(): IdentityProviderUnavailable | undefined {
    return this.outage;
  }

  /**
   * Whether the provider's keys are at hand, fetching them if they never were.
   * @throws IdentityProviderUnavailable, saying what is wrong, until they are
   */
  async ready(): Promise<void> {
    const keys = await this.keySet();
    if (!keys) throw this.outage!;
    if (keys.jwks() === undefined) {
      try {
        await keys.reload();
      } catch (error) {
        throw this.unavailable(error);
      }
    }
  }

  /** The key set, once its URL is known (OIDC_JWKS_URL, or discovered from the issuer). */
  keySet(): Promise<RemoteJWKSet | undefined> {
    if (this.keys) return Promise.resolve(this.keys);
    this.discovery ??= this.discoverKeySet().finally(() => {
      this.discovery = undefined;
    });
    return this.discovery;
  }

  private async discoverKeySet(): Promise<RemoteJWKSet | undefined> {
    const config = this.config;
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
    const allowedAt = last + this.config.jwksCooldownMs;
    const wait = allowedAt - Date.now();
    if (wait > 0) {
      // the provider was away at the last fetch: the keys in hand are all there is
      if (this.outage) throw this.outage;
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
    this.outage = undefined;
    this.state.cameBack();
    return document;
  }

  /** Notes why the keys are out of reach; the log says so once an outage (DependencyState). */
  unavailable(error: unknown): IdentityProviderUnavailable {
    if (this.outage !== undefined && error === this.outage) {
      return this.outage;
    }
    const reason =
      error instanceof IdentityProviderUnavailable
        ? error.message
        : `its key set: ${describe(error)}`;
    this.outage = new IdentityProviderUnavailable(
      `the identity provider's keys are out of reach (${reason})`,
    );
    this.state.wentAway(reason);
    return this.outage;
  }
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

function isObject(document: unknown): boolean {
  return typeof document === 'object' && document !== null;
}

function isKeySet(document: unknown): boolean {
  return (
    isObject(document) && Array.isArray((document as { keys: unknown }).keys)
  );
}

/** A failure to get the keys, rather than a token that does not pass. */
export function isKeyFetchFailure(error: unknown): boolean {
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
