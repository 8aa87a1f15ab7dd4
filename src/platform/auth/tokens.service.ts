import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { hash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { IsNull, Repository } from 'typeorm';
import { ApiToken } from './api-token.entity';
import type { Scope } from './scopes';
import { TOKEN_FORMAT, TOKEN_PREFIX } from '../http/token-format';

/** Writing the last-used time on every request would turn every read into a write. */
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * How long a looked-up token (or its absence) is trusted without asking the database again:
 * revocation and expiry take effect within this time.
 */
export const TOKEN_CACHE_TTL_MS = 1000;
const TOKEN_CACHE_SIZE = 10_000;

/**
 * The longest lifetime a token may be given: ten years (of 365 days). Far enough for any
 * deployment, and far inside what every engine and JavaScript's Date can store exactly.
 */
export const MAX_TOKEN_LIFETIME_MS = 3650 * 24 * 60 * 60 * 1000;
export const MAX_TOKEN_LIFETIME = '3650d';

/** A cached answer of the database for one token hash; `record` is undefined for no such token. */
interface CachedLookup {
  record: ApiToken | undefined;
}

export interface NewToken {
  name: string;
  scopes: Scope[];
  expiresAt?: Date;
}

export interface IssuedToken {
  token: string;
  record: ApiToken;
}

function hashToken(token: string): Buffer {
  // the one-shot hash, not createHash: it is on every request (bench/README.md, "Since the
  // PostgreSQL work")
  return hash('sha256', token, 'buffer');
}

/** @throws RangeError, before anything is written, for an expiry the store cannot keep. */
function assertLifetime(expiresAt: Date): void {
  const lifetime = expiresAt.getTime() - Date.now();
  if (!(lifetime <= MAX_TOKEN_LIFETIME_MS)) {
    throw new RangeError(
      `a token must expire within ${MAX_TOKEN_LIFETIME} (ten years)`,
    );
  }
}

/** Expired, or with an expiry that is not a time (a damaged row): no such token is honoured. */
export function isExpired(token: ApiToken, now = new Date()): boolean {
  return (
    token.expiresAt !== null && !(token.expiresAt.getTime() > now.getTime())
  );
}

@Injectable()
export class TokensService {
  private readonly lookups = new LRUCache<string, CachedLookup>({
    max: TOKEN_CACHE_SIZE,
    ttl: TOKEN_CACHE_TTL_MS,
  });

  constructor(
    @InjectRepository(ApiToken)
    private readonly tokens: Repository<ApiToken>,
  ) {}

  /** Issues a token; this is the only time it is seen in clear. */
  async issue({ name, scopes, expiresAt }: NewToken): Promise<IssuedToken> {
    if (expiresAt !== undefined) assertLifetime(expiresAt);
    const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
    const record = this.tokens.create({
      id: randomUUID(),
      name,
      scopes,
      tokenHash: hashToken(token).toString('hex'),
      expiresAt: expiresAt ?? null,
      revokedAt: null,
      lastUsedAt: null,
    });
    await this.tokens.insert(record);
    return {
      token,
      record: await this.tokens.findOneByOrFail({
        tokenHash: record.tokenHash,
      }),
    };
  }

  list(): Promise<ApiToken[]> {
    return this.tokens.find({ order: { id: 'ASC' } });
  }

  /** @returns false when no unrevoked token has this id */
  async revoke(id: string): Promise<boolean> {
    const result = await this.tokens.update(
      { id, revokedAt: IsNull() },
      { revokedAt: new Date() },
    );
    // this process stops honouring it at once; other processes within TOKEN_CACHE_TTL_MS
    this.lookups.clear();
    return (result.affected ?? 0) > 0;
  }

  /** The live (known, unrevoked, unexpired) token record for a presented token, if any. */
  async authenticate(presented: string): Promise<ApiToken | undefined> {
    if (!TOKEN_FORMAT.test(presented)) return undefined;
    const digest = hashToken(presented);
    const key = digest.toString('hex');
    let lookup = this.lookups.get(key);
    if (!lookup) {
      const found = await this.tokens.findOneBy({ tokenHash: key });
      lookup = { record: found ?? undefined };
      this.lookups.set(key, lookup);
    }
    const { record } = lookup;
    if (
      !record ||
      !timingSafeEqual(Buffer.from(record.tokenHash, 'hex'), digest) ||
      record.revokedAt !== null ||
      isExpired(record)
    ) {
      return undefined;
    }
    await this.recordUse(record);
    return record;
  }

  private async recordUse(record: ApiToken): Promise<void> {
    const now = new Date();
    if (
      record.lastUsedAt !== null &&
      now.getTime() - record.lastUsedAt.getTime() < LAST_USED_RESOLUTION_MS
    ) {
      return;
    }
    // set first, so that requests racing this one do not write it again
    record.lastUsedAt = now;
    await this.tokens.update({ id: record.id }, { lastUsedAt: now });
  }
}
