// first: a Node.js the tool cannot run on says so, before a native module crashes it
import './platform/config/require-supported-node';
import { Command, CommanderError } from 'commander';
import { type CliOutput } from './cli/cli-context';
import { backupsCommands } from './cli/backups.command';
import { eventsCommand } from './cli/events.command';
import { tokensCommand } from './cli/tokens.command';
import { webhooksCommand } from './cli/webhooks.command';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  describeDatabase,
  readDatabaseConfig,
  type DatabaseConfig,
} from './platform/config/database.config';
import {
  loadEnvironment,
  unknownSettingWarnings,
} from './platform/config/environment';
import { StartupError } from './platform/common/errors/startup-error';

function buildProgram(
  output: CliOutput,
  database: () => DatabaseConfig,
): Command {
  const program = new Command('plant-store')
    .description(
      "The plant store operator's tool; uses DATABASE_URL like the service",
    )
    .exitOverride()
    .configureOutput({
      writeOut: (text) => output.out(text.trimEnd()),
      writeErr: (text) => output.err(text.trimEnd()),
    });
  program.addCommand(tokensCommand(output));
  program.addCommand(webhooksCommand(output));
  program.addCommand(eventsCommand(output));
  for (const command of backupsCommands(output, database, () =>
    requireExistingDatabase(database()),
  )) {
    program.addCommand(command);
  }
  // subcommands report usage errors through the same output and exit codes
  for (const command of program.commands) {
    command.exitOverride().configureOutput(program.configureOutput());
    for (const sub of command.commands) {
      sub.exitOverride().configureOutput(program.configureOutput());
    }
  }
  return program;
}

/**
 * The CLI works on the service's database and never creates one: a relative SQLite path read
 * from another folder would otherwise give an empty database whose tokens the service refuses.
 */
function requireExistingDatabase(config: DatabaseConfig): void {
  if (config.engine !== 'sqlite') return;
  if (config.sqlitePath === ':memory:') {
    throw new StartupError(
      "DATABASE_URL=sqlite::memory: is a database of the process's own: the CLI cannot reach the service's; point DATABASE_URL at the service's database",
    );
  }
  const path = resolve(config.sqlitePath);
  if (!existsSync(path)) {
    throw new StartupError(
      `there is no database at ${path}, and the CLI does not create one: run it from the folder the service runs in, or set DATABASE_URL=sqlite:<absolute path of the service's database> (the service creates it when it first starts)`,
    );
  }
}

/** Commands that look at the database themselves, if they need one. */
const CHECK_THEIR_OWN_DATABASE = new Set([
  'backup',
  'restore',
  'verify',
  'move',
]);

/** Runs one command line (`tokens create --name me`); returns the process exit code. */
export async function runCli(
  args: string[],
  output: CliOutput = {
    out: (line) => console.log(line),
    err: (line) => console.error(line),
  },
): Promise<number> {
  try {
    loadEnvironment(process.env);
    for (const warning of unknownSettingWarnings(process.env)) {
      output.err(`warning: ${warning}`);
    }
    const database = readDatabaseConfig(process.env);
    const program = buildProgram(output, () => database);
    // usage and help need no database; a restore may make one, and an archive's check needs none
    program.hook('preAction', (_program, action) => {
      if (!CHECK_THEIR_OWN_DATABASE.has(action.name())) {
        requireExistingDatabase(database);
      }
      output.err(`database: ${describeDatabase(database)}`);
    });
    await program.parseAsync(args, { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'cli.notFound') output.err(`error: ${error.message}`);
      return error.exitCode;
    }
    // a setting, a missing database or a refused value: every message says what to fix
    output.err(
      `error: ${error instanceof Error ? error.message : String(error)}`,
    );
    return 1;
  }
}

if (require.main === module) {
  void runCli(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
