import Database from 'better-sqlite3';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCliProcess, startServiceProcess } from './helpers/service-process';
import { freePort } from './helpers/ports';
import { makeTempFolder } from './helpers/test-app';
import { WebhookReceiver } from './helpers/webhook-receiver';

describe('webhooks across processes (node dist/main.js, node dist/cli.js webhooks)', () => {
  let folder: ReturnType<typeof makeTempFolder>;
  let env: Record<string, string>;

  beforeEach(() => {
    folder = makeTempFolder();
    // the database the service will use, empty: the CLI migrates it but never creates one
    writeFileSync(join(folder.path, 'store.sqlite'), '');
    env = {
      DATABASE_URL: `sqlite:${join(folder.path, 'store.sqlite')}`,
      WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOKS_RETRY_BASE: '50ms',
      WEBHOOKS_RETRY_MAX_DELAY: '100ms',
      WEBHOOKS_POLL_INTERVAL: '50ms',
      // an attempt cut by SIGKILL holds its claim for the timeout plus 2 s
      WEBHOOKS_TIMEOUT: '1s',
    };
  });

  afterEach(() => folder.remove());

  const cli = (...args: string[]) => runCliProcess(args, env);

  it('delivers a create acknowledged just before SIGKILL once the service is back', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/hooks/plants`;
    const added = await cli('webhooks', 'add', '--url', url);
    expect(added.status).toBe(0);
    const token = (await cli('tokens', 'create', '--name', 'crash')).lastLine;

    // the receiver is down: the delivery cannot have gone out before the kill
    const first = await startServiceProcess(env);
    const created = await fetch(`${first.baseUrl}/plants`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Authorization: `Bearer ${token}`,
      },
      body: '{"id":9223372036854775807,"name":"Phoenix Palm"}',
    });
    expect(created.status).toBe(200);
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');

    const receiver = await WebhookReceiver.start(undefined, port);
    const second = await startServiceProcess(env);
    try {
      const [webhook] = await receiver.waitFor(1);
      expect(webhook.body).toBe(
        '{"id":9223372036854775807,"name":"Phoenix Palm"}',
      );
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
      await receiver.close();
    }
    const deliveries = await cli('webhooks', 'deliveries');
    expect(deliveries.stdout).toMatch(
      /msg_[0-9a-f]{32}\s+\S+\s+plant\.added\s+delivered\s+\d+\s+200\s+-/,
    );
  });

  it('adds, lists and removes subscriptions; the secret is shown once, on the last line', async () => {
    const receiver = await WebhookReceiver.start();
    try {
      const added = await cli('webhooks', 'add', '--url', receiver.url);
      expect(added.status).toBe(0);
      expect(added.lastLine).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      const id = /added webhook ([0-9a-f-]{36})/.exec(added.stdout)?.[1] ?? '';

      expect(added.stdout).toContain('receiving every event');
      const deletions = await cli(
        'webhooks',
        'add',
        '--url',
        `${receiver.url}/deleted`,
        '--events',
        'plant.deleted',
      );
      expect(deletions.status).toBe(0);

      const listed = await cli('webhooks', 'list');
      expect(listed.stdout).toContain(id);
      expect(listed.stdout).toContain(receiver.url);
      expect(listed.stdout).not.toContain(added.lastLine);
      expect(listed.stdout).toMatch(
        new RegExp(`${receiver.url}/deleted\\s+plant\\.deleted\\s`),
      );
      expect(listed.stdout).toMatch(
        new RegExp(`${id}\\s+\\S+\\s+every event\\s`),
      );

      const removed = await cli('webhooks', 'remove', id);
      expect(removed.status).toBe(0);
      expect((await cli('webhooks', 'list')).stdout).not.toContain(id);
      const again = await cli('webhooks', 'remove', id);
      expect(again.status).toBe(1);
      expect(again.stderr).toContain(`no active webhook with id ${id}`);
    } finally {
      await receiver.close();
    }
  });

  it('lists a stored URL holding a bidirectional override or another invisible character as escapes, and refuses to add one', async () => {
    const spoofed = 'https://hooks.example/\u202egnp.exe\u200b\u2066';
    const refused = await cli('webhooks', 'add', '--url', spoofed);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(
      'url must not contain control or invisible characters (a line break, an escape, a bidirectional override), got U+202E at character 23',
    );
    expect(refused.stderr).not.toContain('\u202e');

    // as a version that took it would have stored it
    expect(
      (await cli('webhooks', 'add', '--url', 'https://hooks.example/')).status,
    ).toBe(0);
    const database = new Database(join(folder.path, 'store.sqlite'));
    database.prepare('UPDATE webhook_subscriptions SET url = ?').run(spoofed);
    database.close();
    const listed = await cli('webhooks', 'list');
    expect(listed.status).toBe(0);
    expect(listed.stdout).toContain(
      'https://hooks.example/\\u202egnp.exe\\u200b\\u2066',
    );
    expect(listed.stdout).not.toMatch(/[\u202e\u200b\u2066]/u);
  });

  it('refuses a private URL without WEBHOOKS_ALLOW_PRIVATE_NETWORKS, saying how to allow it', async () => {
    const result = await runCliProcess(
      ['webhooks', 'add', '--url', 'http://192.168.1.10/hook'],
      {
        DATABASE_URL: env.DATABASE_URL,
      },
    );
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      'error: 192.168.1.10 is not a public address; set WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true to allow it',
    );
  });

  it('refuses an unknown event type, naming the known ones', async () => {
    const result = await cli(
      'webhooks',
      'add',
      '--url',
      'https://example.test/hook',
      '--events',
      'plant.added,plant.eaten',
    );
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      'unknown event type plant.eaten; expected a comma-separated list of plant.added, plant.deleted',
    );
  });

  it('refuses a URL that is not http or https', async () => {
    const result = await cli(
      'webhooks',
      'add',
      '--url',
      'ftp://example.test/hook',
    );
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      'webhook URLs must use http or https, got ftp:',
    );
  });
});
