// @ts-check
import eslint from '@eslint/js';
import eslintConfigPrettier from 'eslint-config-prettier';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import globals from 'globals';
import tseslint from 'typescript-eslint';

// One persistence story (docs/conventions.md, "Persistence"): TypeORM's public API, the
// same code for both engines
const PERSISTENCE_PATTERNS = [
  {
    group: ['typeorm/*'],
    message:
      "TypeORM's public API is what the package root exports; its deeper paths are internals",
  },
  {
    group: ['pg', 'better-sqlite3'],
    allowTypeImports: true,
    message:
      'both engines run the same code: reach the database through TypeORM (docs/conventions.md, "Persistence")',
  },
];

// What every module builds on. Imports run from the feature folders (plants, auth, webhooks,
// ...) down into these, never up: a foundation that knew a feature could not be reused by
// the next one (docs/architecture.md, "Layers").
const FOUNDATIONS = [
  'common',
  'config',
  'database',
  'events',
  'http',
  'logging',
  'metrics',
  'rate-limit',
  'tracing',
];

/** For files `depth` folders below src/, a relative import that leaves the foundations. */
function upwardImport(depth) {
  return {
    // out of a foundation, only to the test helpers beside src/ (for a spec)
    regex: `^(\\.\\./){${depth}}(?!(${FOUNDATIONS.join('|')}|\\.\\./test/helpers)/)`,
    message: `${FOUNDATIONS.join(', ')} are the foundations every module builds on: they import none of the feature folders nor the app (docs/architecture.md, "Layers"); pass what they need in, or move it down`,
  };
}

export default tseslint.config(
  { ignores: ['eslint.config.mjs', 'dist/**', 'dist-test/**', 'coverage/**'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  eslintConfigPrettier,
  {
    languageOptions: {
      globals: { ...globals.node, ...globals.jest },
      sourceType: 'commonjs',
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
  },
  {
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_' },
      ],
      // Transactions are opened by @Transactional() or DataSource.transaction, never by hand:
      // those retry PostgreSQL's serialization failures and always give SQLite's one
      // connection back (src/database/portable-data-source.ts)
      'no-restricted-properties': [
        'error',
        ...['startTransaction', 'commitTransaction', 'rollbackTransaction'].map(
          (property) => ({
            property,
            message:
              'opens or ends a transaction by hand; mark the method @Transactional() (or call DataSource.transaction): docs/conventions.md, "Business rules"',
          }),
        ),
      ],
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: PERSISTENCE_PATTERNS },
      ],
    },
  },
  {
    // no import cycles: what a file needs loads before it, and a part can be read, tested and
    // moved without the one that needs it
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [
        createNodeResolver({
          extensions: ['.ts', '.js'],
          extensionAlias: { '.js': ['.ts', '.js'] },
        }),
      ],
    },
    rules: { 'import-x/no-cycle': ['error', { ignoreExternal: true }] },
  },
  // the foundations, at each depth below src/ (a relative path's meaning depends on it)
  ...[1, 2, 3].map((depth) => ({
    files: [`src/{${FOUNDATIONS.join(',')}}/${'*/'.repeat(depth - 1)}*.ts`],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [...PERSISTENCE_PATTERNS, upwardImport(depth)] },
      ],
    },
  })),
  {
    // an archive reads and writes each engine's storage as it stands, in a snapshot of its
    // own, through cursors, with triggers off (docs/decisions.md, "Backups and moves"): the
    // drivers themselves, as pg_dump and sqlite3 .backup would
    files: ['src/backups/*-store.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [PERSISTENCE_PATTERNS[0]] },
      ],
    },
  },
  {
    // where transactions are implemented
    files: ['src/database/portable-data-source.ts'],
    rules: { 'no-restricted-properties': 'off' },
  },
  {
    files: ['**/*.spec.ts', 'test/**/*.ts'],
    rules: {
      // supertest's response body is typed any; tests assert on its shape
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
  {
    // the resource schematic: CommonJS, loaded by the schematics CLI as it is (no build step)
    files: ['schematics/**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      sourceType: 'commonjs',
      globals: globals.node,
      parserOptions: { projectService: false },
    },
    rules: {
      ...tseslint.configs.disableTypeChecked.rules,
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
);
