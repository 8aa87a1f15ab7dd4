import { BadRequestException } from '@nestjs/common';
import { Command, CommanderError } from 'commander';
import { type CliOutput } from './cli/cli-context';
import { tokensCommand } from './cli/tokens.command';
import { webhooksCommand } from './cli/webhooks.command';
import { readDatabaseConfig } from './config/database.config';
import { ConfigError } from './config/read-env';
import { readWebhooksConfig } from './config/webhooks.config';

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
  program.addCommand(tokensCommand(output));
  program.addCommand(webhooksCommand(output));
  // subcommands report usage errors through the same output and exit codes
  for (const command of program.commands) {
    command.exitOverride().configureOutput(program.configureOutput());
    for (const sub of command.commands) {
      sub.exitOverride().configureOutput(program.configureOutput());
    }
  }
  return program;
}

/** Runs one command line (`tokens create --name me`); returns the process exit code. */
export async function runCli(
  args: string[],
  output: CliOutput = {
    out: (line) => console.log(line),
    err: (line) => console.error(line),
  },
): Promise<number> {
  try {
    readDatabaseConfig(process.env);
    readWebhooksConfig(process.env);
    await buildProgram(output).parseAsync(args, { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'cli.notFound') output.err(`error: ${error.message}`);
      return error.exitCode;
    }
    if (error instanceof ConfigError) {
      output.err(error.message);
    } else if (error instanceof BadRequestException) {
      output.err(`error: ${error.message}`);
    } else {
      output.err(
        `error: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    return 1;
  }
}

if (require.main === module) {
  void runCli(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
