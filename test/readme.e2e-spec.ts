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

/** The pages a reader is sent to: the README, CONTRIBUTING, docs/ and the benchmarks' notes. */
const PAGES = [
  README,
  join(ROOT, 'CONTRIBUTING.md'),
  ...DOCS,
  join(ROOT, 'bench', 'README.md'),
];

/** Every file of a folder, recursively, whose name ends with `suffix`. */
function filesUnder(folder: string, suffix: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith(suffix))
    .map((name) => join(ROOT, folder, name));
}

/** A heading without the command it may end with: `Issue 48: keeping up (`npm run ...`)`. */
const titleOf = (heading: string) =>
  heading.replace(/ \(`[^)]*`\)$/, '').trim();

/** A heading's anchor as GitHub makes it: lower case, spaces to -, punctuation dropped. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^\p{L}\p{N} -]/gu, '')
    .replace(/ /g, '-');
}

/**
 * What a page can be cited by: its headings, and the bold labels that open its bullets
 * (`**Slots.**`), without their closing stop.
 */
function sectionsOf(file: string): Set<string> {
  const text = read(file);
  return new Set([
    ...[...text.matchAll(/^#+ (.+)$/gm)].map(([, heading]) => titleOf(heading)),
    ...[...text.matchAll(/\*\*([^*]+?)\.?\*\*/g)].map(([, label]) =>
      label.trim(),
    ),
  ]);
}

/**
 * Where the pages, the code and the tests name a path of the repository: the start of a word,
 * one of its top folders, then the rest of the path (placeholders and globs left out).
 */
const NAMED_PATH =
  /(?<![\w./-])((?:src|test|bench|scripts|docs|deploy|schematics|clients|openapi|\.ci)\/[\w./-]*[\w/])/g;

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

  it('link only to headings that exist', () => {
    const broken: string[] = [];
    for (const file of PAGES) {
      for (const [, target, anchor] of read(file).matchAll(
        /\]\(((?!https?:)[^)#\s]*)#([^)\s]+)\)/g,
      )) {
        const page = target ? resolve(dirname(file), target) : file;
        if (!existsSync(page)) continue;
        const anchors = [...read(page).matchAll(/^#+ (.+)$/gm)].map(
          ([, heading]) => anchorOf(heading),
        );
        if (!anchors.includes(anchor)) {
          broken.push(`${relative(ROOT, file)}: ${target}#${anchor}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('point each setting of docs/configuration.md at the section that says more, where the page has several', () => {
    const CONFIGURATION = join(ROOT, 'docs', 'configuration.md');
    const wholePages: string[] = [];
    for (const line of read(CONFIGURATION).split('\n')) {
      const setting = /^- `([A-Z_]+)`/.exec(line)?.[1];
      if (!setting) continue;
      for (const [, target] of line.matchAll(/\]\(([^)#\s]+\.md)\)/g)) {
        const page = read(resolve(dirname(CONFIGURATION), target));
        if ((page.match(/^## /gm) ?? []).length > 1) {
          wholePages.push(`${setting}: ${target}`);
        }
      }
    }
    expect(wholePages).toEqual([]);
  });

  it('name only files and folders that exist', () => {
    // the modules docs/adding-a-module.md shows being generated
    const generated =
      /^(src\/modules|test)\/(garden-beds?|orders?|catalogue|inventory|stock-items|transfers|care)\b/;
    const missing: string[] = [];
    // bench/README.md is history: it names files since removed
    for (const file of PAGES.filter((page) => !page.includes('bench'))) {
      const text = read(file);
      for (const { 1: path, index } of text.matchAll(NAMED_PATH)) {
        // a glob or a placeholder goes on past the path
        const next = text.slice(index + path.length, index + path.length + 2);
        if (/[*<{]/.test(next) || generated.test(path)) continue;
        if (!existsSync(join(ROOT, path))) {
          missing.push(`${relative(ROOT, file)}: ${path}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('name only settings the service reads', () => {
    const settings = new Set(
      [
        ...read(join(ROOT, '.env.example')).matchAll(/^# ([A-Z][A-Z0-9_]*)=/gm),
      ].map(([, name]) => name),
    );
    const families = [...settings]
      .filter((name) => name.includes('_'))
      .map((name) => name.slice(0, name.indexOf('_') + 1));
    // the misspelling docs/configuration.md shows the service warning of
    const shownMisspelt = 'RATE_LIMT_PER_TOKEN';
    const unknown: string[] = [];
    for (const file of PAGES) {
      for (const [, name] of read(file).matchAll(
        /`([A-Z][A-Z0-9]*_[A-Z0-9_]+)[=`]/g,
      )) {
        if (
          families.some((family) => name.startsWith(family)) &&
          !settings.has(name) &&
          name !== shownMisspelt
        ) {
          unknown.push(`${relative(ROOT, file)}: ${name}`);
        }
      }
    }
    expect(unknown).toEqual([]);
  });

  it('name only npm scripts that exist', () => {
    const scripts = Object.keys(
      (JSON.parse(read(join(ROOT, 'package.json'))) as { scripts: object })
        .scripts,
    );
    const unknown = PAGES.flatMap((file) =>
      // not a script of a package in node_modules/
      [
        ...read(file).matchAll(
          /(?<!node_modules\/[\w-]+ && )npm run ([\w:-]+)/g,
        ),
      ]
        .map(([, script]) => script)
        .filter((script) => !scripts.includes(script))
        .map((script) => `${relative(ROOT, file)}: npm run ${script}`),
    );
    expect(unknown).toEqual([]);
  });

  it('cite only sections that exist, from the pages, the code and the tests', () => {
    const sections = new Map<string, Set<string>>();
    const broken: string[] = [];
    const citing = [
      ...PAGES,
      ...filesUnder('src', '.ts'),
      ...filesUnder('test', '.ts'),
      ...filesUnder('bench', '.js'),
    ];
    for (const file of citing) {
      // `docs/decisions.md, "Webhooks", "Slots"`: the page, then the names it is cited by,
      // which may run on over a comment's next line
      const text = read(file).replace(/\n\s*(?:\*|\/\/)\s*/g, ' ');
      for (const [, page, names] of text.matchAll(
        /((?:docs\/[\w-]+|bench\/README|README|CONTRIBUTING)\.md),? ((?:"[^"\n]+"(?:, | and )?)+)/g,
      )) {
        if (!existsSync(join(ROOT, page))) continue;
        if (!sections.has(page))
          sections.set(page, sectionsOf(join(ROOT, page)));
        for (const [, name] of names.matchAll(/"([^"]+)"/g)) {
          // a bench/README.md section is cited by its start: "Issue 48"
          const known = [...sections.get(page)!].some(
            (section) => section === name || section.startsWith(`${name}:`),
          );
          if (!known) {
            broken.push(`${relative(ROOT, file)}: ${page}, "${name}"`);
          }
        }
      }
    }
    expect([...new Set(broken)]).toEqual([]);
  });

  it("state the suites' times and the mutation score in docs/testing.md alone", () => {
    // a line naming a suite, with a duration or a percentage on it
    const suite = /npm test\b|test:slow|test:mutation|\.ci\/run|mutation score/;
    const figure =
      /\b\d[\d,.]* ?(?:s|min|minutes|seconds|%)(?![\w-])|\ban? (?:minute|hour)\b/;
    const elsewhere = [README, join(ROOT, 'CONTRIBUTING.md'), ...DOCS]
      .filter((file) => !file.endsWith(join('docs', 'testing.md')))
      .flatMap((file) =>
        read(file)
          .split('\n')
          .filter((line) => suite.test(line) && figure.test(line))
          .map((line) => `${relative(ROOT, file)}: ${line.trim()}`),
      );
    expect(elsewhere).toEqual([]);
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
