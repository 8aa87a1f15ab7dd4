import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  readdirSync,
  readFileSync,
  symlinkSync,
} from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import {
  ROOT,
  startServiceProcess,
  type ServiceProcess,
} from './helpers/service-process';
import { makeTempFolder } from './helpers/test-app';

const README = join(ROOT, 'README.md');
const DOCS = readdirSync(join(ROOT, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .map((name) => join(ROOT, 'docs', name));
const read = (file: string) => readFileSync(file, 'utf8');

/** The `sh` blocks of a Markdown file, their `\` continuations joined. */
function shellBlocks(file: string): string[] {
  return [...read(file).matchAll(/^```sh\n([\s\S]*?)^```/gm)].map(([, block]) =>
    block.replace(/\\\n\s*/g, ''),
  );
}

/** The lines of `block` a reader can paste as they are: no `<placeholder>`, no install. */
function runnableLines(block: string): string[] {
  return block
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'))
    .filter((line) => !/<[a-z]+>|\[--/.test(line));
}

/** What `block` says its commands print: its `# {...}` comment lines, in order. */
function printed(block: string): string[] {
  return [...block.matchAll(/^# (\{.*)$/gm)].map(([, output]) => output);
}

describe('README.md and docs/', () => {
  it('keep the README short: under 15 KB, the quick start first', () => {
    expect(Buffer.byteLength(read(README))).toBeLessThan(15 * 1024);
    expect(
      [...read(README).matchAll(/^## (.+)$/gm)].map(([, title]) => title)[0],
    ).toBe('Quick start');
  });

  it('link every document of docs/ from the README, one click away', () => {
    const linked = new Set(
      [...read(README).matchAll(/\]\((docs\/[^)#]+\.md)\)/g)].map(([, path]) =>
        join(ROOT, path),
      ),
    );
    expect(DOCS.filter((file) => !linked.has(file))).toEqual([]);
  });

  it('link only to files that exist', () => {
    const broken: string[] = [];
    for (const file of [README, ...DOCS]) {
      for (const [, target] of read(file).matchAll(
        /\]\(((?!https?:|#)[^)#\s]+)[^)]*\)/g,
      )) {
        if (!existsSync(resolve(dirname(file), target))) {
          broken.push(`${relative(ROOT, file)}: ${target}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('have no table line over 200 characters', () => {
    const long = [README, ...DOCS].flatMap((file) =>
      read(file)
        .split('\n')
        .filter((line) => line.startsWith('|') && line.length > 200)
        .map((line) => `${relative(ROOT, file)}: ${line.slice(0, 60)}...`),
    );
    expect(long).toEqual([]);
  });

  it('name no fixed address of the service in a command: each uses $BASE', () => {
    const fixed = [README, ...DOCS].flatMap((file) =>
      shellBlocks(file)
        .flatMap(runnableLines)
        .map((line) => line.replace(/\s+#.*$/, ''))
        .filter((line) => /https?:\/\/(localhost|127\.0\.0\.1):\d/.test(line))
        .filter((line) => !line.startsWith('BASE=${BASE:-'))
        .map((line) => `${relative(ROOT, file)}: ${line}`),
    );
    expect(fixed).toEqual([]);
  });
});

describe("README's shell snippets, against the service on a port that is not 3000", () => {
  let folder: ReturnType<typeof makeTempFolder>;
  let service: ServiceProcess;
  let databaseUrl: string;

  beforeAll(async () => {
    folder = makeTempFolder();
    databaseUrl = `sqlite:${join(folder.path, 'store.sqlite')}`;
    service = await startServiceProcess({ DATABASE_URL: databaseUrl });
    expect(service.port).not.toBe(3000);
  });

  afterAll(async () => {
    service.child.kill('SIGTERM');
    await service.exited;
    folder.remove();
  });

  /**
   * Runs `lines` with bash, stopping at the first failure, in `cwd`: a folder like the
   * project's for npm (its package.json, its scripts linked) but without the repository's .env.
   */
  const runSnippet = (lines: string[], cwd: string) =>
    spawnSync('bash', ['-euo', 'pipefail', '-c', lines.join('\n')], {
      cwd,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        BASE: service.baseUrl,
        DATABASE_URL: databaseUrl,
      },
      encoding: 'utf8',
      timeout: 60_000,
    });
  const projectLike = () => {
    const project = join(folder.path, 'project');
    if (!existsSync(project)) {
      spawnSync('mkdir', [project]);
      copyFileSync(join(ROOT, 'package.json'), join(project, 'package.json'));
      symlinkSync(join(ROOT, 'scripts'), join(project, 'scripts'));
    }
    return project;
  };
  // example.com is for illustrations (RFC 2606): a block calling an identity provider there
  // shows how, and cannot run here (test/oidc.e2e-spec.ts runs one on loopback)
  const blocks = shellBlocks(README).filter(
    (block) =>
      !block.includes('npm install') && !/\.example\.com\b/.test(block),
  );

  it('finds the first request and the tool among them', () => {
    expect(blocks.filter((block) => block.includes('$BASE'))).toHaveLength(1);
    expect(blocks.length).toBeGreaterThanOrEqual(2);
  });

  it('print what the README says they print', () => {
    for (const block of blocks) {
      const result = runSnippet(runnableLines(block), projectLike());
      expect(result.stderr).not.toMatch(/error/i);
      expect(result.status).toBe(0);
      // curl -s adds no newline, so the answers of a block run together
      expect(result.stdout).toContain(printed(block).join(''));
    }
  });

  it("fail loudly outside the project's folder: npm says why, the service names the empty token", () => {
    const [firstRequest] = blocks.filter((block) => block.includes('$BASE'));
    const result = runSnippet(
      // without -e, as a reader's shell runs it: the request goes out with the empty token
      ['set +e', ...runnableLines(firstRequest)],
      folder.path,
    );
    expect(result.stderr).toContain('Could not read package.json');
    expect(result.stdout).toContain('"error":401');
    expect(result.stdout).toContain('the bearer token is empty');
  });
});
