import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { unsupportedNode } from '../src/platform/config/supported-node';
import { describeWithPostgres, POSTGRES_ADMIN_URL } from './helpers/postgres';
import {
  runServiceToExit,
  startServiceProcess,
} from './helpers/service-process';
import { eventually } from './helpers/webhook-receiver';

const PAGE = readFileSync(
  join(__dirname, '..', 'docs', 'troubleshooting.md'),
  'utf8',
);

/** The lines a part of docs/troubleshooting.md quotes: its `### ` headings, each one code span. */
const quotedIn = (text: string): string[] =>
  [...text.matchAll(/^### `(.+)`$/gm)].map(([, line]) => line);
const QUOTED = quotedIn(PAGE);
/** Those of its PostgreSQL section, which a machine without PostgreSQL cannot make. */
const QUOTED_OF_POSTGRES = new Set(
  quotedIn(
    PAGE.slice(PAGE.indexOf('\n## PostgreSQL\n')).split(
      /\n## (?!PostgreSQL)/,
    )[0],
  ),
);
let postgresRan = false;

/** Every line the tests below made the service print, as the page writes it. */
const made = new Set<string>();

/** `line` with what differs between machines as the page writes it: `<port>`, `<host>`… */
function asQuoted(line: string, placeholders: Record<string, string>): string {
  return Object.entries(placeholders).reduce(
    (text, [value, name]) => text.split(value).join(name),
    line,
  );
}

/** The one fatal line of a service that could not start with `env`. */
async function fatalLineOf(env: Record<string, string>): Promise<string> {
  const { status, lines } = await runServiceToExit({ PORT: '0', ...env });
  expect(status).toBe(1);
  const fatal = lines.filter(({ level }) => level >= 50);
  expect(fatal).toHaveLength(1);
  return fatal[0].msg;
}

function expectQuoted(line: string): void {
  made.add(line);
  expect(QUOTED).toContain(line);
}

// docs/troubleshooting.md quotes the lines the service prints when it cannot start; each one
// made to happen here, and the page held to the service's words
describe('docs/troubleshooting.md: the lines it quotes', () => {
  it('quotes the line of an unsupported Node.js', () => {
    const line = unsupportedNode('20.20.2', '^22.15.0 || ^24.11.0');
    expectQuoted(
      asQuoted(line!, {
        '^22.15.0 || ^24.11.0': '<range>',
        '20.20.2': '<version>',
        [process.execPath]: '<path>',
      }),
    );
  });

  it.each([
    ['a setting it cannot take', { PORT: 'abc' }],
    ['an engine it does not have', { DATABASE_URL: 'mysql://x@127.0.0.1/x' }],
    [
      'a SQLite file where no file can be',
      { DATABASE_URL: 'sqlite:/proc/plant-store.sqlite' },
    ],
    [
      'a PostgreSQL server that is not there',
      { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/x' },
    ],
  ])('quotes the line of %s', async (_, env) => {
    expectQuoted(await fatalLineOf(env));
  });

  it('quotes the line of a port in use', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) =>
      blocker.listen(0, '127.0.0.1', resolve),
    );
    const { port } = blocker.address() as { port: number };
    try {
      const line = await fatalLineOf({
        PORT: String(port),
        HOST: '127.0.0.1',
      });
      expectQuoted(asQuoted(line, { [`port ${port} `]: 'port <port> ' }));
    } finally {
      blocker.close();
    }
  });

  it('quotes the warning of a setting it does not know, and starts', async () => {
    const service = await startServiceProcess({
      PORTT: '3000',
      DATABASE_URL: 'sqlite::memory:',
      LOG_LEVEL: 'warn',
    });
    try {
      // the log is written every 250 ms (LOG_FLUSH_INTERVAL_MS): live may come first
      const warnings = await eventually(
        () =>
          service
            .lines()
            .filter(
              ({ level, context }) =>
                level === 40 && context === 'Configuration',
            ),
        (found) => found.length > 0,
      );
      expect(warnings).toHaveLength(1);
      expectQuoted(warnings[0].msg);
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
  });

  describeWithPostgres('on PostgreSQL', () => {
    const server = new URL(POSTGRES_ADMIN_URL);
    const host = server.hostname;
    const port = server.port || '5432';
    const placeholders = {
      [`${host}:${port}`]: '<host>:<port>',
      [`-h ${host} -p ${port} -U ${decodeURIComponent(server.username)}`]:
        '-h <host> -p <port> -U <user>',
    };
    beforeAll(() => (postgresRan = true));
    const on = (change: (url: URL) => void) => {
      const url = new URL(POSTGRES_ADMIN_URL);
      change(url);
      return { DATABASE_URL: url.toString() };
    };

    it.each([
      [
        'a database not created',
        on((url) => (url.pathname = '/plant_store_never_created')),
      ],
      [
        'a user the server refuses',
        on((url) => (url.username = 'plant_store_no_such_role')),
      ],
      // the server of this repository's tests has no TLS (postgres.e2e-spec.ts checks it)
      [
        'TLS the server does not have',
        on((url) => url.searchParams.set('sslmode', 'require')),
      ],
    ])('quotes the line of %s', async (_, env) => {
      expectQuoted(asQuoted(await fatalLineOf(env), placeholders));
    });
  });
});

// declared last, so run last: jest runs a file's blocks in order
describe('docs/troubleshooting.md: nothing else', () => {
  it('quotes no line that the tests above did not make', () => {
    expect(
      QUOTED.filter(
        (line) =>
          !made.has(line) && (postgresRan || !QUOTED_OF_POSTGRES.has(line)),
      ),
    ).toEqual([]);
  });
});
