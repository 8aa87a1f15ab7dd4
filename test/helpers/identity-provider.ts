import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  exportJWK,
  generateKeyPair,
  SignJWT,
  type CryptoKey,
  type JWK,
} from 'jose';

interface SigningKey {
  kid: string;
  alg: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

/** How the key set is served: as it is, or in one of the ways a provider can fail. */
export type KeySetMode =
  | 'ok'
  | 'down'
  | 'error'
  | 'slow'
  | 'huge'
  | 'not-json'
  | 'no-keys';

export interface TokenOptions {
  kid?: string;
  /** Claims over the defaults (iss, aud, sub, iat, exp in 5 minutes); undefined removes one. */
  claims?: Record<string, unknown>;
  /** Header over the defaults (alg of the key, kid, typ at+jwt); undefined removes one. */
  header?: Record<string, unknown>;
}

/**
 * An OpenID provider on loopback, as Keycloak or Entra ID serve one: discovery at
 * `/.well-known/openid-configuration`, its keys at `/jwks`, access tokens signed by keys it
 * generates. Tests rotate its keys and make it fail.
 */
export class IdentityProvider {
  readonly issuer: string;
  readonly audience = 'plant-store';
  /** Requests for the key set so far, answered or not. */
  keySetFetches = 0;
  mode: KeySetMode = 'ok';
  private readonly keys = new Map<string, SigningKey>();
  /** The kids the key set lists; a key outside it still signs, as a forger's would. */
  published: string[] = [];

  private constructor(
    private readonly server: Server,
    private readonly port: number,
  ) {
    this.issuer = `http://127.0.0.1:${port}/realms/plants`;
  }

  static async start(): Promise<IdentityProvider> {
    const sockets = new Set<import('node:net').Socket>();
    const started: { provider?: IdentityProvider } = {};
    const server = createServer((request, response) =>
      started.provider!.answer(request.url ?? '', response),
    );
    server.on('connection', (socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) =>
      server.listen(0, '127.0.0.1', resolve),
    );
    const provider = new IdentityProvider(
      server,
      (server.address() as AddressInfo).port,
    );
    started.provider = provider;
    provider.sockets = sockets;
    await provider.addKey('key-1');
    provider.published = ['key-1'];
    return provider;
  }

  private sockets = new Set<import('node:net').Socket>();

  /** What its discovery document names as `jwks_uri`, when not its own key set's URL. */
  discoveredJwksUrl?: string;

  get jwksUrl(): string {
    return `http://127.0.0.1:${this.port}/realms/plants/jwks`;
  }

  /** The service's settings for this provider. */
  env(overrides: Record<string, string> = {}): Record<string, string> {
    return {
      OIDC_ISSUER: this.issuer,
      OIDC_AUDIENCE: this.audience,
      OIDC_JWKS_COOLDOWN: '100ms',
      ...overrides,
    };
  }

  async addKey(kid: string, alg = 'RS256'): Promise<void> {
    const { privateKey, publicKey } = await generateKeyPair(alg, {
      extractable: true,
    });
    this.keys.set(kid, {
      kid,
      alg,
      privateKey,
      publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' },
    });
  }

  publicJwk(kid = 'key-1'): JWK {
    return this.keys.get(kid)!.publicJwk;
  }

  /** An access token for `sub`, signed by `kid` (the first key unless said). */
  async token(
    sub: string,
    scopes: string | string[] | undefined,
    { kid = 'key-1', claims = {}, header = {} }: TokenOptions = {},
  ): Promise<string> {
    const key = this.keys.get(kid)!;
    const now = Math.floor(Date.now() / 1000);
    const payload = withoutUndefined({
      iss: this.issuer,
      aud: this.audience,
      sub,
      iat: now,
      exp: now + 300,
      ...(scopes === undefined ? {} : { scope: scopes }),
      ...claims,
    });
    const protectedHeader = withoutUndefined({
      alg: key.alg,
      kid,
      typ: 'at+jwt',
      ...header,
    });
    return new SignJWT(payload)
      .setProtectedHeader(protectedHeader as { alg: string })
      .sign(key.privateKey);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private answer(url: string, response: ServerResponse): void {
    if (url === '/realms/plants/.well-known/openid-configuration') {
      if (this.mode === 'down') return void response.destroy();
      return json(response, {
        issuer: this.issuer,
        jwks_uri: this.discoveredJwksUrl ?? this.jwksUrl,
        token_endpoint: `${this.issuer}/protocol/openid-connect/token`,
      });
    }
    if (url !== '/realms/plants/jwks') {
      response.writeHead(404).end();
      return;
    }
    this.keySetFetches += 1;
    const keys = this.published.map((kid) => this.keys.get(kid)!.publicJwk);
    switch (this.mode) {
      case 'down':
        return void response.destroy();
      case 'error':
        return void response.writeHead(503).end('maintenance');
      case 'slow':
        // headers at once, the body never: only a timeout on the whole fetch ends it
        response.writeHead(200, { 'Content-Type': 'application/json' });
        response.write('{"keys":');
        return;
      case 'huge':
        return json(response, {
          keys,
          padding: 'x'.repeat(2 * 1024 * 1024),
        });
      case 'not-json':
        response.writeHead(200, { 'Content-Type': 'application/json' });
        return void response.end('{"keys": [');
      case 'no-keys':
        return json(response, { keys: 'none' });
      case 'ok':
        return json(response, { keys });
    }
  }
}

function json(response: ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  response
    .writeHead(200, {
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(text),
    })
    .end(text);
}

function withoutUndefined(object: Record<string, unknown>) {
  return Object.fromEntries(
    Object.entries(object).filter(([, value]) => value !== undefined),
  );
}
