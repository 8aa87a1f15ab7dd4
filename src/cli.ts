import { Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { NestFactory } from '@nestjs/core';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { AuthModule } from './auth/auth.module';
import type { ApiToken } from './auth/api-token.entity';
import { isScope, SCOPES, type Scope } from './auth/scopes';
import { TokensService } from './auth/tokens.service';
import { databaseConfig } from './config/database.config';
import { ConfigError } from './config/read-env';
import { DatabaseModule } from './database/database.module';

@Module({
  imports: [
    ConfigModule.forRoot({
      isGlobal: true,
      ignoreEnvFile: true,
      load: [databaseConfig],
    }),
    DatabaseModule,
    AuthModule,
  ],
})
class CliModule {}

export interface CliOutput {
  out: (line: string) => void;
  err: (line: string) => void;
}

const DURATION_UNITS_MS: Record<string, number> = {
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

function parseDuration(text: string): number {
  const match = /^(\d+)([smhdw])$/.exec(text);
  const ms = match ? Number(match[1]) * DURATION_UNITS_MS[match[2]] : 0;
  if (!(ms > 0 && Number.isSafeInteger(ms))) {
    throw new InvalidArgumentError(
      'expected a positive duration such as 30m, 1h, 30d or 2w',
    );
  }
  return ms;
}

function parseScopes(text: string): Scope[] {
  const scopes = text.split(',').map((scope) => scope.trim());
  const unknown = scopes.filter((scope) => !isScope(scope));
  if (unknown.length > 0 || scopes.length === 0) {
    throw new InvalidArgumentError(
      `unknown scope ${unknown.join(', ')}; expected a comma-separated list of ${SCOPES.join(', ')}`,
    );
  }
  return [...new Set(scopes as Scope[])];
}

function parseTokenId(text: string): string {
  if (
    !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(
      text,
    )
  ) {
    throw new InvalidArgumentError(
      'expected a token id as shown by tokens list',
    );
  }
  return text.toLowerCase();
}

function formatTable(rows: string[][]): string[] {
  const widths = rows[0].map((_, column) =>
    Math.max(...rows.map((row) => row[column].length)),
  );
  return rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column]))
      .join('  ')
      .trimEnd(),
  );
}

function formatTime(date: Date | null): string {
  return date === null ? '-' : date.toISOString();
}

function describeToken(token: ApiToken): string[] {
  return [
    String(token.id),
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

async function withTokens<T>(
  work: (tokens: TokensService) => Promise<T>,
): Promise<T> {
  const context = await NestFactory.createApplicationContext(CliModule, {
    logger: false,
    abortOnError: false,
  });
  try {
    return await work(context.get(TokensService));
  } finally {
    await context.close();
  }
}

function buildProgram(output: CliOutput): Command {
  const program = new Command('plant-store')
    .description(
      "The plant store operator's tool; uses DATABASE_URL like the service",
    )
    .exitOverride()
    .configureOutput({
      writeOut: (text) => output.out(text.trimEnd()),
      writeErr: (text) => output.err(text.trimEnd()),
    });
  const tokens = program.command('tokens').description('manage API tokens');

  tokens
    .command('create')
    .description('issue a token; it is printed once, alone on the last line')
    .requiredOption('--name <name>', 'who or what the token is for')
    .option(
      '--scopes <scopes>',
      `comma-separated scopes (${SCOPES.join(', ')})`,
      parseScopes,
      [...SCOPES],
    )
    .option(
      '--expires-in <duration>',
      'lifetime such as 1h or 30d',
      parseDuration,
    )
    .action(
      async (options: {
        name: string;
        scopes: Scope[];
        expiresIn?: number;
      }) => {
        const expiresAt =
          options.expiresIn === undefined
            ? undefined
            : new Date(Date.now() + options.expiresIn);
        const { token, record } = await withTokens((service) =>
          service.issue({
            name: options.name,
            scopes: options.scopes,
            expiresAt,
          }),
        );
        output.out(
          `created token ${record.id} "${record.name}" with scopes ${record.scopes.join(',')}` +
            (expiresAt ? `, expiring ${expiresAt.toISOString()}` : ''),
        );
        output.out('store it now: it is not shown again');
        output.out(token);
      },
    );

  tokens
    .command('list')
    .description('show every token; never the token itself')
    .action(async () => {
      const records = await withTokens((service) => service.list());
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
    .argument('<id>', 'the token id, as tokens list shows it', parseTokenId)
    .action(async (id: string) => {
      const revoked = await withTokens((service) => service.revoke(id));
      if (!revoked) {
        throw new CommanderError(
          1,
          'token.unknown',
          `no active token with id ${id}`,
        );
      }
      output.out(`revoked token ${id}`);
    });

  return program;
}

/** Runs one command line; returns the process exit code. */
export async function runCli(
  args: string[],
  output: CliOutput = {
    out: (line) => console.log(line),
    err: (line) => console.error(line),
  },
): Promise<number> {
  try {
    await buildProgram(output).parseAsync(args, { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'token.unknown') output.err(`error: ${error.message}`);
      return error.exitCode;
    }
    output.err(
      error instanceof ConfigError
        ? error.message
        : `error: ${error instanceof Error ? error.message : String(error)}`,
    );
    return 1;
  }
}

if (require.main === module) {
  void runCli(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
