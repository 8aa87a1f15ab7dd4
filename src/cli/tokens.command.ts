import { Command, CommanderError, InvalidArgumentError } from 'commander';
import type { ApiToken } from '../platform/auth/api-token.entity';
import type { Scope } from '../platform/auth/scopes';
import {
  MAX_TOKEN_LIFETIME,
  MAX_TOKEN_LIFETIME_MS,
  TokensService,
} from '../platform/auth/tokens.service';
import {
  DURATION_FORMAT,
  parseDuration,
} from '../platform/config/setting-kinds';
import {
  formatTable,
  formatTime,
  withService,
  type CliOutput,
} from './cli-context';
import { SERVICE_DECLARATIONS } from './cli.module';

const { scopes: catalogue } = SERVICE_DECLARATIONS;

/**
 * The lifetime of a token made without `--expires-in`: no token the tool makes lives for ever
 * (docs/decisions.md, "Authentication").
 */
const DEFAULT_TOKEN_LIFETIME = '90d';
const DEFAULT_TOKEN_LIFETIME_MS = parseDuration(DEFAULT_TOKEN_LIFETIME)!;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function parseLifetime(text: string): number {
  const ms = parseDuration(text);
  // written as a duration, yet too large to be one
  if (ms === undefined && DURATION_FORMAT.test(text.trim())) {
    return tooLong();
  }
  if (ms === undefined) {
    throw new InvalidArgumentError(
      'expected a positive duration such as 30m, 1h, 30d',
    );
  }
  return ms > MAX_TOKEN_LIFETIME_MS ? tooLong() : ms;
}

function tooLong(): never {
  throw new InvalidArgumentError(
    `a token lives at most ${MAX_TOKEN_LIFETIME} (ten years); create a new one before it expires`,
  );
}

function parseScopes(text: string): Scope[] {
  const scopes = text.split(',').map((scope) => scope.trim());
  const unknown = scopes.filter((scope) => !catalogue.has(scope));
  if (unknown.length > 0) {
    throw new InvalidArgumentError(
      `unknown scope ${unknown.join(', ')}; expected a comma-separated list of ${catalogue.all.join(', ')}`,
    );
  }
  return [...new Set(scopes as Scope[])];
}

export function parseUuid(text: string): string {
  if (!UUID.test(text)) {
    throw new InvalidArgumentError(
      'expected an id as the list command shows it',
    );
  }
  return text.toLowerCase();
}

function describeToken(token: ApiToken): string[] {
  return [
    token.id,
    token.name,
    token.scopes.join(','),
    formatTime(token.createdAt),
    formatTime(token.expiresAt),
    formatTime(token.lastUsedAt),
    token.revokedAt === null
      ? 'active'
      : `revoked ${formatTime(token.revokedAt)}`,
  ];
}

export function tokensCommand(output: CliOutput): Command {
  const tokens = new Command('tokens').description('manage API tokens');

  tokens
    .command('create')
    .description('issue a token; it is printed once, alone on the last line')
    .requiredOption('--name <name>', 'who or what the token is for')
    .option(
      '--scopes <scopes>',
      `comma-separated scopes (${catalogue.all.join(', ')}); without it, ${catalogue.defaults.join(', ')}`,
      parseScopes,
      catalogue.defaults,
    )
    .option(
      '--expires-in <duration>',
      `lifetime such as 1h or 30d, at most ${MAX_TOKEN_LIFETIME}; without it, ${DEFAULT_TOKEN_LIFETIME}`,
      parseLifetime,
    )
    .action(
      async (options: {
        name: string;
        scopes: Scope[];
        expiresIn?: number;
      }) => {
        const expiresAt = new Date(
          Date.now() + (options.expiresIn ?? DEFAULT_TOKEN_LIFETIME_MS),
        );
        const { token, record } = await withService(TokensService, (service) =>
          service.issue({
            name: options.name,
            scopes: options.scopes,
            expiresAt,
          }),
        );
        output.out(
          `created token ${record.id} "${record.name}" with scopes ${record.scopes.join(',')}` +
            `, expiring ${expiresAt.toISOString()}`,
        );
        output.out('store it now: it is not shown again');
        output.out(token);
      },
    );

  tokens
    .command('list')
    .description('show every token; never the token itself')
    .action(async () => {
      const records = await withService(TokensService, (service) =>
        service.list(),
      );
      const header = [
        'ID',
        'NAME',
        'SCOPES',
        'CREATED',
        'EXPIRES',
        'LAST USED',
        'STATUS',
      ];
      formatTable([header, ...records.map(describeToken)]).forEach(output.out);
    });

  tokens
    .command('revoke')
    .description('revoke a token at once')
    .argument('<id>', 'the token id, as tokens list shows it', parseUuid)
    .action(async (id: string) => {
      const revoked = await withService(TokensService, (service) =>
        service.revoke(id),
      );
      if (!revoked) {
        throw new CommanderError(
          1,
          'cli.notFound',
          `no active token with id ${id}`,
        );
      }
      output.out(`revoked token ${id}`);
    });

  return tokens;
}
