import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT } from './helpers/service-process';

interface LintResult {
  filePath: string;
  messages: { ruleId: string | null; message: string }[];
}

/**
 * Each probe: an import line (or none) and a statement, in an otherwise clean file, in src/ or
 * the folder named third.
 */
const PROBES: Record<string, [string, string, string?]> = {
  'the platform importing a module': [
    "import { PLANT_SCOPES } from '../../modules/plants/plant.scopes';",
    'void PLANT_SCOPES;\n  await Promise.resolve();',
    'platform/logging',
  ],
  'the platform, deeper, importing a module': [
    "import { WEBHOOK_SCOPES } from '../../../modules/webhooks/webhook.scopes';",
    'void WEBHOOK_SCOPES;\n  await Promise.resolve();',
    'platform/common/json',
  ],
  'the platform importing the app': [
    "import { AppModule } from '../../app.module';",
    'void AppModule;\n  await Promise.resolve();',
    'platform/events',
  ],
  'the platform importing itself and the test helpers': [
    "import { INT64_MAX } from './int64';\nimport { StartupError } from '../errors/startup-error';\nimport { appConfig } from '../../config/app.config';\nimport { freePort } from '../../../../test/helpers/ports';",
    'void INT64_MAX;\n  void StartupError;\n  void appConfig;\n  void freePort;\n  await Promise.resolve();',
    'platform/common/json',
  ],
  'a module importing the platform and itself': [
    "import { EventCatalogue } from '../../../platform/events';\nimport { JsonText } from '../../../platform/common/json';\nimport { PLANT_SCOPES } from '../plant.scopes';",
    'void EventCatalogue;\n  void JsonText;\n  void PLANT_SCOPES;\n  await Promise.resolve();',
    'modules/plants/dto',
  ],
  'a module importing a file inside a part of the platform': [
    "import { EventCatalogue } from '../../platform/events/event-catalogue';",
    'void EventCatalogue;\n  await Promise.resolve();',
    'modules/plants',
  ],
  'a module importing a file inside a part of common': [
    "import { JsonText } from '../../../platform/common/json/lossless-json';",
    'void JsonText;\n  await Promise.resolve();',
    'modules/plants/dto',
  ],
  "a module importing another's events and the DTOs they carry": [
    "import { PLANT_DELETED } from '../plants/plant.events';\nimport { CreatePlantDto } from '../plants/dto/create-plant.dto';",
    'void PLANT_DELETED;\n  void CreatePlantDto;\n  await Promise.resolve();',
    'modules/webhooks',
  ],
  'a module importing another module': [
    "import { WEBHOOK_SCOPES } from '../webhooks/webhook.scopes';",
    'void WEBHOOK_SCOPES;\n  await Promise.resolve();',
    'modules/plants',
  ],
  'a module importing the app': [
    "import { AppModule } from '../../../app.module';",
    'void AppModule;\n  await Promise.resolve();',
    'modules/plants/dto',
  ],
  "an import of TypeORM's internals": [
    "import { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';",
    'void PostgresDriver;\n  await Promise.resolve();',
  ],
  'an import of a database driver': [
    "import { Pool } from 'pg';",
    'void Pool;\n  await Promise.resolve();',
  ],
  'repository.save(...)': ['', 'await repository.save({ id: 1 });'],
  'dataSource.transaction(...)': [
    '',
    'await dataSource.transaction(() => Promise.resolve());',
  ],
  'queryRunner.startTransaction()': [
    '',
    'await dataSource.createQueryRunner().startTransaction();',
  ],
  'insert, update and delete': [
    "import { Not } from 'typeorm';\nimport type { Database } from 'better-sqlite3';",
    'const database: Database | undefined = undefined;\n  void database;\n  await repository.insert({ id: 1 });\n  await repository.update({ id: Not(2) }, { id: 2 });\n  await repository.delete({ id: 2 });',
  ],
};

/**
 * The project's lint rules that stand for a convention of docs/conventions.md, each
 * checked against code that breaks it, linted with the project's own configuration.
 */
describe('conventions enforced by lint (eslint.config.mjs)', () => {
  const messagesOf = new Map<string, string[]>();

  beforeAll(() => {
    // real files under src/, where every rule applies, so that the typed rules find them
    const run = randomBytes(6).toString('hex');
    const files = Object.entries(PROBES).map(
      ([label, [imports, statement, folder = '']], index) => {
        const file = join(ROOT, 'src', folder, `lint-probe-${run}-${index}.ts`);
        writeFileSync(
          file,
          `${imports}\nimport type { DataSource, Repository } from 'typeorm';\n` +
            `export async function change(dataSource: DataSource, repository: Repository<{ id: number }>): Promise<void> {\n` +
            `  void dataSource;\n  void repository;\n  ${statement}\n}\n`,
        );
        return [label, file] as const;
      },
    );
    try {
      // a process of its own: jest's module sandbox cannot load the ESM configuration
      const eslint = spawnSync(
        join(ROOT, 'node_modules', '.bin', 'eslint'),
        ['--format', 'json', ...files.map(([, file]) => file)],
        { cwd: ROOT, encoding: 'utf8', timeout: 120_000 },
      );
      const results = JSON.parse(eslint.stdout) as LintResult[];
      for (const [label, file] of files) {
        const result = results.find(({ filePath }) => filePath === file);
        messagesOf.set(
          label,
          (result?.messages ?? [{ ruleId: null, message: 'not linted' }]).map(
            ({ ruleId, message }) => `${ruleId}: ${message}`,
          ),
        );
      }
    } finally {
      for (const [, file] of files) rmSync(file, { force: true });
    }
  });

  it.each([
    'the platform importing a module',
    'the platform, deeper, importing a module',
    'the platform importing the app',
  ])(
    'refuses %s: imports run from the modules down into the platform, never up',
    (label) => {
      expect(messagesOf.get(label)).toEqual([
        expect.stringMatching(
          /^@typescript-eslint\/no-restricted-imports: .*src\/platform\/ is what every module builds on: it imports no module \(src\/modules\/\) and not the app/,
        ),
      ]);
    },
  );

  it("refuses a module importing another module's insides: modules meet through events", () => {
    expect(messagesOf.get('a module importing another module')).toEqual([
      expect.stringMatching(
        /^@typescript-eslint\/no-restricted-imports: .*a module imports of another only what it publishes, its events \(\*\.events\.ts\) and the DTOs they carry/,
      ),
    ]);
  });

  it.each([
    'a module importing a file inside a part of the platform',
    'a module importing a file inside a part of common',
  ])(
    'refuses %s: a module uses a part through its public surface (its index.ts)',
    (label) => {
      expect(messagesOf.get(label)).toEqual([
        expect.stringMatching(
          /^@typescript-eslint\/no-restricted-imports: .*a module imports a part of the platform through its public surface/,
        ),
      ]);
    },
  );

  it('refuses a module importing the app', () => {
    expect(messagesOf.get('a module importing the app')).toEqual([
      expect.stringMatching(
        /^@typescript-eslint\/no-restricted-imports: .*a module imports the platform \(src\/platform\/\), not the app/,
      ),
    ]);
  });

  it.each([
    'the platform importing itself and the test helpers',
    'a module importing the platform and itself',
    "a module importing another's events and the DTOs they carry",
  ])('accepts %s', (label) => {
    expect(messagesOf.get(label)).toEqual([]);
  });

  it('refuses a transaction opened by hand: @Transactional() or DataSource.transaction opens them', () => {
    expect(messagesOf.get('queryRunner.startTransaction()')).toEqual([
      expect.stringMatching(
        /^no-restricted-properties: .*opens or ends a transaction by hand; mark the method @Transactional\(\)/,
      ),
    ]);
  });

  it.each(['repository.save(...)', 'dataSource.transaction(...)'])(
    'accepts %s: transactions are safe on both engines',
    (label) => {
      expect(messagesOf.get(label)).toEqual([]);
    },
  );

  it("refuses imports of TypeORM's internals and of a database driver: one persistence story, the same code for both engines", () => {
    expect(messagesOf.get("an import of TypeORM's internals")).toEqual([
      expect.stringMatching(
        /^@typescript-eslint\/no-restricted-imports: .*TypeORM's public API/,
      ),
    ]);
    expect(messagesOf.get('an import of a database driver')).toEqual([
      expect.stringMatching(
        /^@typescript-eslint\/no-restricted-imports: .*both engines run the same code/,
      ),
    ]);
  });

  it("accepts insert, update and delete, imports from TypeORM's root, and a driver's types", () => {
    expect(messagesOf.get('insert, update and delete')).toEqual([]);
  });
});

/** Every text file of the repository that people read: code, tests, documents. */
function readableFiles(): string[] {
  const files: string[] = [
    'README.md',
    'CONTRIBUTING.md',
    'CHANGELOG.md',
    'ormconfig.ts',
  ].map((file) => join(ROOT, file));
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'results') walk(path);
      } else if (/\.(ts|js|md|ya?ml)$/.test(entry.name)) {
        files.push(path);
      }
    }
  };
  for (const folder of ['src', 'test', 'docs', 'openapi', 'bench']) {
    walk(join(ROOT, folder));
  }
  return files;
}

/** A file's text with comment line breaks joined, so a citation may wrap. */
function joinedText(file: string): string {
  return readFileSync(file, 'utf8').replace(
    /\s*\n\s*(?:\*(?!\/)|\/\/)?\s*/g,
    ' ',
  );
}

describe('documents the code cites', () => {
  const files = readableFiles();

  it.each(['decisions.md', 'conventions.md'])(
    'cites only sections that docs/%s has',
    (document) => {
      const headings = new Set(
        [
          ...readFileSync(join(ROOT, 'docs', document), 'utf8').matchAll(
            /^#{2,4} (.+)$/gm,
          ),
        ].map(([, heading]) => heading.trim()),
      );
      const citation = new RegExp(
        `docs/${document.replace('.', '\\.')}\\)?,? \\(?"([^"]+)"`,
        'g',
      );
      const cited: string[] = [];
      const dangling: string[] = [];
      for (const file of files) {
        for (const [, section] of joinedText(file).matchAll(citation)) {
          cited.push(section);
          if (!headings.has(section)) {
            dangling.push(`${relative(ROOT, file)}: "${section}"`);
          }
        }
      }
      expect(cited.length).toBeGreaterThan(0);
      expect(dangling).toEqual([]);
    },
  );

  it('cites no document that a clone of the repository does not have', () => {
    const outside = [
      ['shared', 'spec'].join('/'),
      ['..', 'shared'].join('/'),
      ['DECISIONS', 'md'].join('.'),
    ];
    const decisionNumber = new RegExp(['\\(D', '\\d{1,2}\\)'].join(''));
    const offenders = files.filter((file) => {
      const text = readFileSync(file, 'utf8');
      return (
        outside.some((name) => text.includes(name)) || decisionNumber.test(text)
      );
    });
    expect(offenders.map((file) => relative(ROOT, file))).toEqual([]);
  });
});

describe('names that say their role', () => {
  // Nest's own suffixes, and agent nouns that say what the provider does
  const ROLE =
    /(Service|Controller|Guard|Pipe|Filter|Interceptor|Middleware|Repository|Store|Module|Publisher|Scheduler|Runner|Sender|Dispatcher|Limiter|Server)$/;

  it('gives every injectable of src a name that ends in its role', () => {
    const sources = readdirSync(join(ROOT, 'src'), {
      recursive: true,
      encoding: 'utf8',
    }).filter((file) => file.endsWith('.ts') && !file.endsWith('.spec.ts'));
    const injectables: string[] = [];
    const unnamed: string[] = [];
    for (const file of sources) {
      const text = readFileSync(join(ROOT, 'src', file), 'utf8');
      for (const [, name] of text.matchAll(
        /@Injectable\([^)]*\)\s*export class (\w+)/g,
      )) {
        injectables.push(name);
        if (!ROLE.test(name)) unnamed.push(`src/${file}: ${name}`);
      }
    }
    expect(injectables.length).toBeGreaterThan(20);
    expect(unnamed).toEqual([]);
  });
});
