// @ts-check
import eslint from '@eslint/js';
import eslintConfigPrettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['eslint.config.mjs', 'dist/**', 'coverage/**'] },
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
      // One statement per change (docs/adding-a-module.md): TypeORM shares one SQLite
      // connection between concurrent requests, so a multi-statement transaction there takes in
      // whatever else runs meanwhile (https://github.com/typeorm/typeorm/issues/1884).
      'no-restricted-properties': [
        'error',
        ...[
          'save',
          'transaction',
          'startTransaction',
          'softRemove',
          'recover',
        ].map((property) => ({
          property,
          message:
            'runs several statements in a transaction; write one statement per change (insert, update, delete) and publish events with a trigger: docs/adding-a-module.md, "One statement per change"',
        })),
      ],
    },
  },
  {
    // One persistence story (docs/adding-a-module.md, "Persistence"): TypeORM's public API,
    // the same code for both engines
    files: ['src/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['typeorm/*'],
              message:
                "TypeORM's public API is what the package root exports; its deeper paths are internals",
            },
            {
              group: ['pg', 'better-sqlite3'],
              allowTypeImports: true,
              message:
                'both engines run the same code: reach the database through TypeORM (docs/adding-a-module.md, "Persistence")',
            },
          ],
        },
      ],
    },
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
);
