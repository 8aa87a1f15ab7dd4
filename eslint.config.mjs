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

// The platform beneath, the product above (docs/architecture.md, "Layers"): src/platform/ is
// what every module builds on, and imports none of them nor the app; a module in src/modules/
// imports the platform, each part through its public surface (the part's index.ts), and of
// another module only what it publishes: its events and the DTOs they carry, for modules meet
// through events. The app's own files (main.ts, app.module.ts,
// cli/, openapi/) put the two together.
const LAYERS_DOC = 'docs/architecture.md, "Layers"';

/** For files `depth` folders below src/platform/, a relative import that leaves it. */
function leavesPlatform(depth) {
  return {
    // up to src/, only on to the test helpers beside it (for a spec)
    regex: `^(\\.\\./){${depth + 1}}(?!\\.\\./test/helpers/)`,
    message: `src/platform/ is what every module builds on: it imports no module (src/modules/) and not the app (${LAYERS_DOC}); pass what it needs in, or move it down`,
  };
}

/** For files `depth` folders below src/modules/, an import of another module's insides or of the app. */
function leavesModule(depth) {
  return [
    {
      regex: `^(\\.\\./){${depth}}(?!\\.\\./)(?![a-z0-9/-]+/([\\w-]+\\.events|dto/[\\w./-]+)$)`,
      message: `a module imports of another only what it publishes, its events (*.events.ts) and the DTOs they carry (dto/): modules meet through events (${LAYERS_DOC})`,
    },
    {
      regex: `^(\\.\\./){${depth + 1}}(?!platform/|\\.\\./test/helpers/)`,
      message: `a module imports the platform (src/platform/), not the app (${LAYERS_DOC})`,
    },
    {
      // a part is a folder of src/platform/, or of src/platform/common/
      regex: `^(\\.\\./){${depth + 1}}platform/(?!common/)[\\w-]+/|^(\\.\\./){${depth + 1}}platform/common/[\\w-]+/`,
      message: `a module imports a part of the platform through its public surface, its folder (platform/database, platform/common/json), never a file inside it (${LAYERS_DOC})`,
    },
  ];
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
      // connection back (src/platform/database/transaction-runner.ts)
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
  // the layers, at each depth below their folder (a relative path's meaning depends on it)
  ...[1, 2, 3, 4].flatMap((depth) => [
    {
      files: [`src/platform/${'*/'.repeat(depth)}*.ts`],
      rules: {
        '@typescript-eslint/no-restricted-imports': [
          'error',
          { patterns: [...PERSISTENCE_PATTERNS, leavesPlatform(depth)] },
        ],
      },
    },
    {
      files: [`src/modules/${'*/'.repeat(depth)}*.ts`],
      rules: {
        '@typescript-eslint/no-restricted-imports': [
          'error',
          { patterns: [...PERSISTENCE_PATTERNS, ...leavesModule(depth)] },
        ],
      },
    },
  ]),
  {
    // an archive reads and writes each engine's storage as it stands, in a snapshot of its
    // own, through cursors, with triggers off (docs/decisions.md, "Backups and moves"): the
    // drivers themselves, as pg_dump and sqlite3 .backup would
    files: ['src/platform/backups/*-store.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [PERSISTENCE_PATTERNS[0], leavesPlatform(1)] },
      ],
    },
  },
  {
    // where transactions are implemented: run, SQLite's sessions, migrations
    files: [
      'src/platform/database/transaction-runner.ts',
      'src/platform/database/sqlite-connection.ts',
      'src/platform/database/locked-migrations.ts',
    ],
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
