import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { WebhookSubscriptionsService } from '../webhooks/webhook-subscriptions.service';
import {
  formatTable,
  formatTime,
  withService,
  type CliOutput,
} from './cli-context';
import { parseUuid } from './tokens.command';

function parseCount(text: string): number {
  if (!/^\d{1,4}$/.test(text) || Number(text) < 1) {
    throw new InvalidArgumentError('expected a whole number from 1 to 9999');
  }
  return Number(text);
}

export function webhooksCommand(output: CliOutput): Command {
  const webhooks = new Command('webhooks').description(
    'manage plant-added webhook subscriptions',
  );

  webhooks
    .command('add')
    .description(
      'subscribe a URL; its signing secret is printed once, alone on the last line',
    )
    .requiredOption('--url <url>', 'where to POST each plant added')
    .action(async (options: { url: string }) => {
      const subscription = await withService(
        WebhookSubscriptionsService,
        (service) => service.add(options.url),
      );
      output.out(`added webhook ${subscription.id} for ${subscription.url}`);
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
        ['ID', 'URL', 'CREATED'],
        ...subscriptions.map((s) => [s.id, s.url, formatTime(s.createdAt)]),
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
      const removed = await withService(
        WebhookSubscriptionsService,
        (service) => service.remove(id),
      );
      if (!removed) {
        throw new CommanderError(
          1,
          'cli.notFound',
          `no active webhook with id ${id}`,
        );
      }
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
          'PLANT',
          'STATUS',
          'ATTEMPTS',
          'LAST RESULT',
          'NEXT RETRY',
        ],
        ...deliveries.map((d) => [
          d.id,
          d.subscriptionId,
          String(d.plantId),
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
