import { NotFoundException } from '@nestjs/common';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { WebhookSubscriptionsService } from '../modules/webhooks/webhook-subscriptions.service';
import {
  formatTable,
  formatTime,
  withService,
  type CliOutput,
} from './cli-context';
import { SERVICE_DECLARATIONS } from './cli.module';
import { parseUuid } from './tokens.command';

const { events: catalogue } = SERVICE_DECLARATIONS;

function parseCount(text: string): number {
  if (!/^\d{1,4}$/.test(text) || Number(text) < 1) {
    throw new InvalidArgumentError('expected a whole number from 1 to 9999');
  }
  return Number(text);
}

function parseEventTypes(text: string): string[] {
  const types = text.split(',').map((type) => type.trim());
  const unknown = types.filter((type) => !catalogue.has(type));
  if (unknown.length > 0) {
    throw new InvalidArgumentError(
      `unknown event type ${unknown.join(', ')}; expected a comma-separated list of ${catalogue.types.join(', ')}`,
    );
  }
  return [...new Set(types)];
}

export function webhooksCommand(output: CliOutput): Command {
  const webhooks = new Command('webhooks').description(
    'manage webhook subscriptions',
  );

  webhooks
    .command('add')
    .description(
      'subscribe a URL; its signing secret is printed once, alone on the last line',
    )
    .requiredOption('--url <url>', 'where to POST each event')
    .option(
      '--events <types>',
      `comma-separated event types (${catalogue.types.join(', ')}); without it, every type, those added later included`,
      parseEventTypes,
    )
    .action(async (options: { url: string; events?: string[] }) => {
      const subscription = await withService(
        WebhookSubscriptionsService,
        (service) =>
          service.add({ url: options.url, eventTypes: options.events }),
      );
      output.out(
        `added webhook ${subscription.id} for ${subscription.url}, receiving ${describeEventTypes(subscription.eventTypes)}`,
      );
      output.out(
        'verify deliveries with this Standard Webhooks signing secret; it is not shown again',
      );
      output.out(subscription.secret);
    });

  webhooks
    .command('list')
    .description('show the active subscriptions; never their secrets')
    .action(async () => {
      const subscriptions = await withService(
        WebhookSubscriptionsService,
        (service) => service.listActive(),
      );
      formatTable([
        ['ID', 'URL', 'EVENTS', 'CREATED', 'RECEIVER'],
        ...subscriptions.map((s) => [
          s.id,
          s.url,
          describeEventTypes(s.eventTypes),
          formatTime(s.createdAt),
          describeReceiver(s),
        ]),
      ]).forEach(output.out);
    });

  webhooks
    .command('remove')
    .description('stop a subscription and cancel its pending deliveries')
    .argument(
      '<id>',
      'the subscription id, as webhooks list shows it',
      parseUuid,
    )
    .action(async (id: string) => {
      await withService(WebhookSubscriptionsService, (service) =>
        service.remove(id),
      ).catch((error: unknown) => {
        if (!(error instanceof NotFoundException)) throw error;
        throw new CommanderError(
          1,
          'cli.notFound',
          `no active webhook with id ${id}`,
        );
      });
      output.out(`removed webhook ${id}`);
    });

  webhooks
    .command('deliveries')
    .description('show recent delivery attempts, their status and next retry')
    .option('--limit <count>', 'how many, newest first', parseCount, 20)
    .action(async (options: { limit: number }) => {
      const deliveries = await withService(
        WebhookSubscriptionsService,
        (service) => service.recentDeliveries(options.limit),
      );
      formatTable([
        [
          'WEBHOOK-ID',
          'SUBSCRIPTION',
          'EVENT',
          'STATUS',
          'ATTEMPTS',
          'LAST RESULT',
          'NEXT RETRY',
        ],
        ...deliveries.map((d) => [
          d.id,
          d.subscriptionId,
          d.eventType,
          d.status,
          String(d.attempts),
          d.lastError ??
            (d.lastStatusCode === null ? '-' : String(d.lastStatusCode)),
          d.status === 'pending' ? formatTime(d.nextAttemptAt) : '-',
        ]),
      ]).forEach(output.out);
    });

  return webhooks;
}

/** `ok`, `failing (3 in a row)`, or `paused until <time> (7 failed in a row)`. */
function describeReceiver({
  consecutiveFailures,
  pausedUntil,
}: {
  consecutiveFailures: number;
  pausedUntil: Date | null;
}): string {
  if (pausedUntil && pausedUntil > new Date()) {
    return `paused until ${formatTime(pausedUntil)} (${consecutiveFailures} failed in a row)`;
  }
  return consecutiveFailures > 0
    ? `failing (${consecutiveFailures} in a row)`
    : 'ok';
}

function describeEventTypes(types: string[] | null): string {
  return types === null ? 'every event' : types.join(',');
}
