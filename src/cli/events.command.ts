import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { isDeclaredName } from '../platform/common/modules/declared-name';
import { SkippedEventsService } from '../platform/events/skipped-events.service';
import {
  formatTable,
  formatTime,
  withService,
  type CliOutput,
} from './cli-context';

function parseHandler(text: string): string {
  if (!isDeclaredName(text)) {
    throw new InvalidArgumentError(
      "expected a handler's name, as events skipped shows it: lowercase words joined by dots or dashes",
    );
  }
  return text;
}

function parseSeq(text: string, previous: bigint[] = []): bigint[] {
  if (!/^[1-9]\d{0,18}$/.test(text) || BigInt(text) > 2n ** 63n - 1n) {
    throw new InvalidArgumentError(
      "expected an event's place in the log (a whole number from 1), as events skipped shows it",
    );
  }
  return [...previous, BigInt(text)];
}

function parseLimit(text: string): number {
  if (!/^\d{1,4}$/.test(text) || Number(text) < 1) {
    throw new InvalidArgumentError('expected a whole number from 1 to 9999');
  }
  return Number(text);
}

/**
 * The events handlers gave up on after their attempts (docs/operations.md, "Skipped events"):
 * list them, have a handler try them again, or forget them.
 */
export function eventsCommand(output: CliOutput): Command {
  const events = new Command('events').description(
    'the events handlers gave up on',
  );

  events
    .command('skipped')
    .description(
      'show the events handlers gave up on after their attempts, oldest first',
    )
    .option('--limit <count>', 'how many at most', parseLimit, 100)
    .action(async (options: { limit: number }) => {
      const skipped = await withService(SkippedEventsService, (service) =>
        service.list(options.limit),
      );
      formatTable([
        [
          'HANDLER',
          'PLACE',
          'EVENT',
          'TYPE',
          'ATTEMPTS',
          'SKIPPED',
          'RETRY',
          'LAST ERROR',
        ],
        ...skipped.map((event) => [
          event.handler,
          String(event.seq),
          event.eventId,
          event.type,
          String(event.attempts),
          formatTime(event.skippedAt),
          event.retryRequestedAt === null ? '-' : 'asked',
          event.lastError.slice(0, 120),
        ]),
      ]).forEach(output.out);
    });

  events
    .command('retry')
    .description(
      'have the handler try skipped events again, in its next turn on a running instance; one that fails again stays skipped',
    )
    .argument('<handler>', "the handler's name", parseHandler)
    .argument(
      '[places...]',
      "the events' places in the log; without them, every event the handler skipped",
      (text: string, previous?: bigint[]) => parseSeq(text, previous),
    )
    .action(async (handler: string, places: bigint[] | undefined) => {
      const seqs = places?.length ? places : undefined;
      const asked = await withService(SkippedEventsService, (service) =>
        service.requestRetry(handler, seqs),
      );
      if (asked === 0) {
        throw new CommanderError(
          1,
          'cli.notFound',
          `handler ${handler} has skipped no ${seqs ? `event at ${seqs.join(', ')}` : 'event'}`,
        );
      }
      output.out(
        `asked ${handler} to try ${asked} skipped event${asked === 1 ? '' : 's'} again: events skipped shows any that fail again`,
      );
    });

  events
    .command('dismiss')
    .description('forget a skipped event: it is never handled')
    .argument('<handler>', "the handler's name", parseHandler)
    .argument('<place>', "the event's place in the log", (text: string) =>
      parseSeq(text),
    )
    .action(async (handler: string, [seq]: bigint[]) => {
      const dismissed = await withService(SkippedEventsService, (service) =>
        service.dismiss(handler, seq),
      );
      if (!dismissed) {
        throw new CommanderError(
          1,
          'cli.notFound',
          `handler ${handler} has skipped no event at ${seq}`,
        );
      }
      output.out(`dismissed the event at ${seq} that ${handler} skipped`);
    });

  return events;
}
