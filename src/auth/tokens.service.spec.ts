import { DataSource } from 'typeorm';
import { ApiToken } from './api-token.entity';
import { TokensService } from './tokens.service';

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
});
