import { DataSource } from 'typeorm';
import { ApiToken } from './api-token.entity';
import {
  isExpired,
  MAX_TOKEN_LIFETIME,
  MAX_TOKEN_LIFETIME_MS,
  TOKEN_CACHE_TTL_MS,
  TokensService,
} from './tokens.service';

describe('TokensService', () => {
  let dataSource: DataSource;
  let service: TokensService;

  beforeEach(async () => {
    dataSource = await new DataSource({
      type: 'better-sqlite3',
      database: ':memory:',
      entities: [ApiToken],
      synchronize: true,
    }).initialize();
    service = new TokensService(dataSource.getRepository(ApiToken));
  });

  afterEach(() => dataSource.destroy());

  it('authenticates an issued token and nothing else', async () => {
    const { token, record } = await service.issue({
      name: 'ci',
      scopes: ['plants:read'],
    });
    expect((await service.authenticate(token))?.id).toBe(record.id);
    const tampered = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    expect(await service.authenticate(tampered)).toBeUndefined();
    expect(await service.authenticate('')).toBeUndefined();
  });

  it('refuses a revoked token, and revokes only once', async () => {
    const { token, record } = await service.issue({
      name: 'ci',
      scopes: ['plants:read'],
    });
    expect(await service.revoke(record.id)).toBe(true);
    expect(await service.revoke(record.id)).toBe(false);
    expect(await service.authenticate(token)).toBeUndefined();
  });

  it('refuses an expired token', async () => {
    const { token } = await service.issue({
      name: 'ci',
      scopes: ['plants:read'],
      expiresAt: new Date(Date.now() - 1),
    });
    expect(await service.authenticate(token)).toBeUndefined();
  });

  it('writes the last-used time at most once a minute', async () => {
    const repository = dataSource.getRepository(ApiToken);
    const { token } = await service.issue({
      name: 'ci',
      scopes: ['plants:read'],
    });
    const update = jest.spyOn(repository, 'update');
    await service.authenticate(token);
    const firstUse = (await service.list())[0].lastUsedAt;
    expect(firstUse).not.toBeNull();
    await service.authenticate(token);
    expect(update).toHaveBeenCalledTimes(1);
    expect((await service.list())[0].lastUsedAt).toEqual(firstUse);
  });

  it('refuses a token with anything around it, without asking the database', async () => {
    const { token } = await service.issue({
      name: 'ci',
      scopes: ['plants:read'],
    });
    const findOneBy = jest.spyOn(
      dataSource.getRepository(ApiToken),
      'findOneBy',
    );
    for (const presented of [
      `x${token}`,
      `${token}x`,
      ` ${token}`,
      token.slice(4),
    ]) {
      expect(await service.authenticate(presented)).toBeUndefined();
    }
    expect(findOneBy).not.toHaveBeenCalled();
  });

  it('looks a token up once within the cache time, by its hash', async () => {
    const { token: first } = await service.issue({
      name: 'a',
      scopes: ['plants:read'],
    });
    const { token: second, record } = await service.issue({
      name: 'b',
      scopes: ['plants:write'],
    });
    const findOneBy = jest.spyOn(
      dataSource.getRepository(ApiToken),
      'findOneBy',
    );
    expect((await service.authenticate(second))?.id).toBe(record.id);
    expect((await service.authenticate(second))?.id).toBe(record.id);
    expect(findOneBy).toHaveBeenCalledTimes(1);
    expect((await service.authenticate(first))?.name).toBe('a');
    expect(TOKEN_CACHE_TTL_MS).toBe(1000);
  });

  it('lists tokens in id order', async () => {
    for (const name of ['c', 'a', 'b']) {
      await service.issue({ name, scopes: ['plants:read'] });
    }
    const ids = (await service.list()).map(({ id }) => id);
    expect(ids).toEqual([...ids].sort());
  });

  it('returns the record it stored, as the database has it', async () => {
    const { record } = await service.issue({
      name: 'stored',
      scopes: ['plants:read', 'plants:write'],
    });
    expect(record).toMatchObject({
      name: 'stored',
      scopes: ['plants:read', 'plants:write'],
      revokedAt: null,
      expiresAt: null,
    });
    expect(record.createdAt).toBeInstanceOf(Date);
  });

  it(`issues tokens that live up to ${MAX_TOKEN_LIFETIME} (ten years), and refuses longer before writing`, async () => {
    expect(MAX_TOKEN_LIFETIME).toBe('3650d');
    expect(MAX_TOKEN_LIFETIME_MS).toBe(315_360_000_000);
    jest.useFakeTimers({
      now: new Date('2026-11-26T00:00:00Z'),
      doNotFake: ['nextTick', 'setImmediate'],
    });
    try {
      const longest = new Date(Date.now() + MAX_TOKEN_LIFETIME_MS);
      await service.issue({
        name: 'decade',
        scopes: ['plants:read'],
        expiresAt: longest,
      });
      for (const expiresAt of [
        new Date(longest.getTime() + 1),
        new Date('+275760-09-13T00:00:00Z'),
        new Date(Number.NaN),
      ]) {
        await expect(
          service.issue({
            name: 'forever',
            scopes: ['plants:read'],
            expiresAt,
          }),
        ).rejects.toThrow('a token must expire within 3650d (ten years)');
      }
    } finally {
      jest.useRealTimers();
    }
    expect((await service.list()).map(({ name }) => name)).toEqual(['decade']);
  });

  it('calls a token expired at its expiry, or when its expiry is not a time', () => {
    const now = new Date('2026-11-26T00:00:00Z');
    const token = (expiresAt: Date | null) => ({ expiresAt }) as ApiToken;
    expect(isExpired(token(null), now)).toBe(false);
    expect(isExpired(token(new Date(now.getTime() + 1)), now)).toBe(false);
    expect(isExpired(token(new Date(now.getTime())), now)).toBe(true);
    expect(isExpired(token(new Date(Number.NaN)), now)).toBe(true);
  });

  it('writes the last-used time again once a minute has passed, and not a moment before', async () => {
    const repository = dataSource.getRepository(ApiToken);
    const { token } = await service.issue({
      name: 'ci',
      scopes: ['plants:read'],
    });
    const [record] = await service.list();
    const authenticate = async (at: number) => {
      jest.setSystemTime(at);
      await service.authenticate(token);
    };
    jest.useFakeTimers({
      now: 1_800_000_000_000,
      doNotFake: ['nextTick', 'setImmediate'],
    });
    try {
      const update = jest.spyOn(repository, 'update');
      await authenticate(1_800_000_000_000);
      await authenticate(1_800_000_060_000 - 1);
      expect(update).toHaveBeenCalledTimes(1);
      await authenticate(1_800_000_060_000);
      expect(update).toHaveBeenCalledTimes(2);
      expect(update).toHaveBeenLastCalledWith(
        { id: record.id },
        { lastUsedAt: new Date(1_800_000_060_000) },
      );
    } finally {
      jest.useRealTimers();
    }
  });
});
