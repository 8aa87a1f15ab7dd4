import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './helpers/service-process';

interface LintResult {
  filePath: string;
  messages: { ruleId: string | null; message: string }[];
}

const PROBES: Record<string, string> = {
  'repository.save(...)': 'await repository.save({ id: 1 });',
  'dataSource.transaction(...)':
    'await dataSource.transaction(() => Promise.resolve());',
  'queryRunner.startTransaction()':
    'await dataSource.createQueryRunner().startTransaction();',
  'insert, update and delete':
    'await repository.insert({ id: 1 });\n  await repository.update({ id: 1 }, { id: 2 });\n  await repository.delete({ id: 2 });',
};

/**
 * The project's lint rules that stand for a convention of docs/adding-a-module.md, each
 * checked against code that breaks it, linted with the project's own configuration.
 */
describe('conventions enforced by lint (eslint.config.mjs)', () => {
  const messagesOf = new Map<string, string[]>();

  beforeAll(() => {
    // real files under test/, so that the typed rules find them in tsconfig.json
    const run = randomBytes(6).toString('hex');
    const files = Object.entries(PROBES).map(([label, statement], index) => {
      const file = join(ROOT, 'test', `lint-probe-${run}-${index}.ts`);
      writeFileSync(
        file,
        `import type { DataSource, Repository } from 'typeorm';\n` +
          `export async function change(dataSource: DataSource, repository: Repository<{ id: number }>): Promise<void> {\n` +
          `  void dataSource;\n  void repository;\n  ${statement}\n}\n`,
      );
      return [label, file] as const;
    });
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
    'repository.save(...)',
    'dataSource.transaction(...)',
    'queryRunner.startTransaction()',
  ])(
    'refuses %s: one statement per change, on the SQLite connection every request shares',
    (label) => {
      expect(messagesOf.get(label)).toEqual([
        expect.stringMatching(
          /^no-restricted-properties: .*one statement per change/,
        ),
      ]);
    },
  );

  it('accepts insert, update and delete', () => {
    expect(messagesOf.get('insert, update and delete')).toEqual([]);
  });
});
