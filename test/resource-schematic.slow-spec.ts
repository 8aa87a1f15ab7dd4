import { HostTree } from '@angular-devkit/schematics';
import {
  SchematicTestRunner,
  UnitTestTree,
} from '@angular-devkit/schematics/testing';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  existsSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { ROOT } from './helpers/service-process';
import { describeWithPostgres, POSTGRES_ADMIN_URL } from './helpers/postgres';

// The resource schematic (schematics/resource), run as nestjs/schematics tests its own: over a
// virtual tree holding the project's real files. The migrations are generated for real, on a
// temporary SQLite file and a PostgreSQL database made for the run. The resource's name has the
// fixtures' prefix, so that no module a developer generates can clash with it.
const TIMESTAMP = 1795700000000;

function projectTree(): UnitTestTree {
  const tree = new UnitTestTree(new HostTree());
  const copy = (path: string) => {
    for (const entry of readdirSync(join(ROOT, path), {
      withFileTypes: true,
    })) {
      const child = join(path, entry.name);
      if (entry.isDirectory()) copy(child);
      else tree.create(child, readFileSync(join(ROOT, child)));
    }
  };
  copy('src');
  for (const file of [
    'openapi/service.yaml',
    'package.json',
    'nest-cli.json',
  ]) {
    tree.create(file, readFileSync(join(ROOT, file)));
  }
  return tree;
}

describeWithPostgres('nest g resource (schematics/resource)', () => {
  const runner = new SchematicTestRunner(
    '@plant-store/schematics',
    join(ROOT, 'schematics', 'collection.json'),
  );
  const APP_MODULE = readFileSync(join(ROOT, 'src/app.module.ts'), 'utf8');
  const options = (extra: Record<string, unknown> = {}) => ({
    name: 'fixture-seed-trays',
    timestamp: TIMESTAMP,
    postgresUrl: POSTGRES_ADMIN_URL,
    ...extra,
  });
  const run = (extra: Record<string, unknown> = {}, tree = projectTree()) =>
    runner.runSchematic('resource', options(extra), tree);
  const written = (tree: UnitTestTree, before: UnitTestTree) =>
    tree.files.filter((file) => !before.exists(file)).sort();

  describe('for fixture-seed-trays, with int64 ids', () => {
    let before: UnitTestTree;
    let tree: UnitTestTree;

    beforeAll(async () => {
      before = projectTree();
      tree = await run({}, projectTree());
    });

    it('writes the module folder, its migrations and its e2e spec, and nothing else', () => {
      expect(written(tree, before)).toEqual(
        [
          'dto/create-fixture-seed-tray.dto.ts',
          'dto/fixture-seed-tray.dto.ts',
          'dto/list-fixture-seed-trays-query.dto.ts',
          'dto/update-fixture-seed-tray.dto.ts',
          'fixture-seed-tray.entity.ts',
          'fixture-seed-tray.events.ts',
          'fixture-seed-tray.scopes.ts',
          'fixture-seed-trays.controller.ts',
          'fixture-seed-trays.module.ts',
          'fixture-seed-trays.service.spec.ts',
          'fixture-seed-trays.service.ts',
          `migrations/postgres/${TIMESTAMP}-AddFixtureSeedTrays.ts`,
          `migrations/sqlite/${TIMESTAMP}-AddFixtureSeedTrays.ts`,
        ]
          .map((file) => `/src/modules/fixture-seed-trays/${file}`)
          .concat('/test/fixture-seed-trays.e2e-spec.ts')
          .sort(),
      );
      const changed = before.files.filter(
        (file) => tree.readContent(file) !== before.readContent(file),
      );
      expect(changed).toEqual(['/src/app.module.ts']);
    });

    it('adds the module to AppModule, last of its imports', () => {
      const lines = tree.readContent('src/app.module.ts').split('\n');
      const original = APP_MODULE.split('\n');
      expect(lines.filter((line) => !original.includes(line))).toEqual([
        "import { FixtureSeedTraysModule } from './modules/fixture-seed-trays/fixture-seed-trays.module';",
        '    FixtureSeedTraysModule,',
      ]);
      expect(lines.indexOf('    FixtureSeedTraysModule,')).toBe(
        lines.indexOf('    WebhooksModule,') + 1,
      );
    });

    it('declares the scopes and the event in the module folder, and registers them in the module file', () => {
      const folder = 'src/modules/fixture-seed-trays';
      expect(
        tree.readContent(`${folder}/fixture-seed-tray.scopes.ts`),
      ).toContain(
        "export const FIXTURE_SEED_TRAY_SCOPES = {\n  'fixture-seed-trays:read': {\n    description: 'list and read fixture seed trays',\n    byDefault: false,\n  },\n  'fixture-seed-trays:write': {\n    description: 'add and delete fixture seed trays',\n    byDefault: false,\n  },\n} as const satisfies ScopeDefinitions;",
      );
      expect(
        tree.readContent(`${folder}/fixture-seed-tray.events.ts`),
      ).toContain("type: 'fixture-seed-tray.added',");
      const module = tree.readContent(`${folder}/fixture-seed-trays.module.ts`);
      for (const registration of [
        'TypeOrmModule.forFeature([FixtureSeedTray])',
        'ScopesModule.forFeature(FIXTURE_SEED_TRAY_SCOPES)',
        'EventsModule.forFeature([FIXTURE_SEED_TRAY_ADDED])',
        'controllers: [FixtureSeedTraysController]',
        'providers: [FixtureSeedTraysService]',
      ]) {
        expect(module).toContain(registration);
      }
    });

    it('writes the five operations, each behind its scope, with a client-chosen int64 id', () => {
      const controller = tree.readContent(
        'src/modules/fixture-seed-trays/fixture-seed-trays.controller.ts',
      );
      const routes = [
        ...controller.matchAll(
          /@(Get|Post|Patch|Delete)\((?:'([^']*)')?\)\n(?: {2}@HttpCode\(HttpStatus\.\w+\)\n)? {2}@RequireScopes\('([^']+)'\)/g,
        ),
      ].map(([, verb, path, scope]) => `${verb} ${path ?? ''} ${scope}`);
      expect(routes).toEqual([
        'Get  fixture-seed-trays:read',
        'Post  fixture-seed-trays:write',
        'Get :id fixture-seed-trays:read',
        'Patch :id fixture-seed-trays:write',
        'Delete :id fixture-seed-trays:write',
      ]);
      expect(controller).toContain("@Controller('fixture-seed-trays')");
      expect(controller).toContain("@Int64Param('id', ID) id: bigint");
      expect(
        tree.readContent(
          'src/modules/fixture-seed-trays/dto/create-fixture-seed-tray.dto.ts',
        ),
      ).toContain('@Int64Property({ example: EXAMPLE_ID })\n  id!: bigint;');
      expect(
        tree.readContent(
          'src/modules/fixture-seed-trays/fixture-seed-tray.entity.ts',
        ),
      ).toContain(
        "@Entity('fixture_seed_trays')\nexport class FixtureSeedTray {\n  /** Chosen by the client; a true int64. */\n  @Int64PrimaryColumn()\n  id!: bigint;",
      );
    });

    it('publishes fixture-seed-tray.added from the service, inside its unit of work', () => {
      const service = tree.readContent(
        'src/modules/fixture-seed-trays/fixture-seed-trays.service.ts',
      );
      // the method, whatever the line breaks prettier chose for it
      expect(service.replace(/\s+/g, ' ')).toContain(
        '@Transactional() async create( newFixtureSeedTray: CreateFixtureSeedTrayDto, ): Promise<FixtureSeedTray> { ' +
          'const fixtureSeedTray = Object.assign( new FixtureSeedTray(), newFixtureSeedTray, ); ' +
          'await this.fixtureSeedTrays.insert(fixtureSeedTray); ' +
          'await this.events.publish( FIXTURE_SEED_TRAY_ADDED, withoutNulls(fixtureSeedTray), );',
      );
    });

    it('has TypeORM generate one migration per engine from the entity', () => {
      const migration = (engine: string) =>
        tree.readContent(
          `src/modules/fixture-seed-trays/migrations/${engine}/${TIMESTAMP}-AddFixtureSeedTrays.ts`,
        );
      expect(migration('sqlite')).toContain(
        'CREATE TABLE "fixture_seed_trays" ("id" bigint PRIMARY KEY NOT NULL, "name" text NOT NULL, "version" integer NOT NULL)',
      );
      expect(migration('postgres')).toMatch(
        /CREATE TABLE "fixture_seed_trays" \("id" bigint NOT NULL, "name" text NOT NULL, "version" integer NOT NULL, CONSTRAINT "PK_\w+" PRIMARY KEY \("id"\)\)/,
      );
      for (const engine of ['sqlite', 'postgres']) {
        expect(migration(engine)).toContain(
          `export class AddFixtureSeedTrays${TIMESTAMP} implements MigrationInterface {`,
        );
        expect(migration(engine)).toContain(
          'await queryRunner.query(`DROP TABLE "fixture_seed_trays"`);',
        );
      }
    });

    it('writes an e2e spec that runs on both engines, over HTTP, with tokens of the new scopes', () => {
      const spec = tree.readContent('test/fixture-seed-trays.e2e-spec.ts');
      expect(spec).toContain("process.env.TEST_ENGINE ?? 'sqlite'");
      expect(spec).toContain("scopes: ['fixture-seed-trays:write']");
      expect(spec).toContain("scopes: ['plants:read']");
    });

    it('formats every file it writes or changes as the project does', () => {
      const folder = mkdtempSync(join(tmpdir(), 'plant-store-format-'));
      try {
        const files = written(tree, before).concat('/src/app.module.ts');
        for (const file of files) {
          mkdirSync(join(folder, dirname(file)), { recursive: true });
          writeFileSync(join(folder, file), tree.readContent(file));
        }
        const prettier = spawnSync(
          join(ROOT, 'node_modules/.bin/prettier'),
          [
            '--check',
            '--config',
            join(ROOT, '.prettierrc'),
            ...files.map((file) => `.${file}`),
          ],
          { cwd: folder, encoding: 'utf8' },
        );
        expect(prettier.stderr).toBe('');
        expect(prettier.status).toBe(0);
      } finally {
        rmSync(folder, { recursive: true, force: true });
      }
    });

    it('then regenerates the contract, and passes it what to undo if that fails', () => {
      expect(runner.tasks).toHaveLength(1);
      const [{ name, options: task }] = runner.tasks as {
        name: string;
        options: {
          name: string;
          options: { created: string[]; changed: Record<string, string> };
        };
      }[];
      expect([name, task.name]).toEqual(['run-schematic', 'resource-contract']);
      expect(task.options.created.sort()).toEqual(
        written(tree, before).map((file) => file.slice(1)),
      );
      expect(task.options.changed).toEqual({ 'src/app.module.ts': APP_MODULE });
    });
  });

  it("names a resource's scopes after the module folder given as its path, declared by its first resource and shared by the next", async () => {
    const first = await run({ path: 'fixture-greenhouse' });
    const firstDir = 'src/modules/fixture-greenhouse/fixture-seed-trays';
    expect(
      first.readContent(`${firstDir}/fixture-seed-trays.controller.ts`),
    ).toContain("@RequireScopes('fixture-greenhouse:read')");
    expect(
      first.readContent(`${firstDir}/fixture-seed-tray.scopes.ts`),
    ).toContain(
      "'fixture-greenhouse:write': {\n    description: 'add and delete fixture greenhouse',",
    );
    const second = await run(
      { name: 'fixture-pots', path: 'fixture-greenhouse' },
      first,
    );
    const secondDir = 'src/modules/fixture-greenhouse/fixture-pots';
    expect(second.exists(`${secondDir}/fixture-pot.scopes.ts`)).toBe(false);
    expect(
      second.readContent(`${secondDir}/fixture-pots.module.ts`),
    ).not.toContain('ScopesModule');
    expect(
      second.readContent(`${secondDir}/fixture-pots.controller.ts`),
    ).toContain("@RequireScopes('fixture-greenhouse:write')");
    expect(second.readContent('test/fixture-pots.e2e-spec.ts')).toContain(
      "scopes: ['fixture-greenhouse:read']",
    );
  });

  it.each([
    ['--id uuid', () => run({ id: 'uuid' })],
    [
      'nest g uuid-resource',
      () => runner.runSchematic('uuid-resource', options(), projectTree()),
    ],
  ])('makes the service choose UUIDs with %s', async (_, generate) => {
    const tree = await generate();
    expect(
      tree.readContent(
        'src/modules/fixture-seed-trays/fixture-seed-tray.entity.ts',
      ),
    ).toContain("@PrimaryColumn({ type: 'uuid' })\n  id!: string;");
    expect(
      tree.readContent(
        'src/modules/fixture-seed-trays/fixture-seed-trays.service.ts',
      ),
    ).toContain(
      'Object.assign(new FixtureSeedTray(), {\n      id: randomUUID(),\n      ...newFixtureSeedTray,\n    });',
    );
    expect(
      tree.readContent(
        'src/modules/fixture-seed-trays/dto/create-fixture-seed-tray.dto.ts',
      ),
    ).not.toContain('id!');
    expect(
      tree.readContent(
        'src/modules/fixture-seed-trays/fixture-seed-trays.controller.ts',
      ),
    ).toContain("@UuidParam('id', ID) id: string");
    expect(
      tree.readContent(
        `src/modules/fixture-seed-trays/migrations/postgres/${TIMESTAMP}-AddFixtureSeedTrays.ts`,
      ),
    ).toContain('"id" uuid NOT NULL');
    expect(
      tree.readContent(
        `src/modules/fixture-seed-trays/migrations/sqlite/${TIMESTAMP}-AddFixtureSeedTrays.ts`,
      ),
    ).toContain('"id" varchar PRIMARY KEY NOT NULL');
  });

  it('writes no spec with --no-spec', async () => {
    const tree = await run({ spec: false });
    expect(
      tree.files.filter((file) => file.includes('fixture-seed-tray')),
    ).not.toContainEqual(expect.stringMatching(/spec\.ts$/));
    expect(
      tree.exists(
        'src/modules/fixture-seed-trays/fixture-seed-trays.service.ts',
      ),
    ).toBe(true);
  });

  it('writes into the folder itself with --flat, and under a path given, with imports to match', async () => {
    const flat = await run({ flat: true, path: 'catalogue' });
    expect(
      flat.exists('src/modules/catalogue/fixture-seed-trays.module.ts'),
    ).toBe(true);
    expect(
      flat.exists(
        `src/modules/catalogue/migrations/sqlite/${TIMESTAMP}-AddFixtureSeedTrays.ts`,
      ),
    ).toBe(true);
    expect(
      flat.readContent('src/modules/catalogue/fixture-seed-trays.module.ts'),
    ).toContain("from '../../platform/auth'");
    expect(flat.readContent('src/app.module.ts')).toContain(
      "import { FixtureSeedTraysModule } from './modules/catalogue/fixture-seed-trays.module';",
    );
    const nested = await run({ path: 'catalogue' });
    expect(
      nested.readContent(
        'src/modules/catalogue/fixture-seed-trays/dto/create-fixture-seed-tray.dto.ts',
      ),
    ).toContain("from '../../../../platform/common/validation'");
  });

  describe('refuses, before writing anything,', () => {
    it.each([
      [
        { name: 'Garden_Beds' },
        '"Garden_Beds" is not a resource name: use a plural kebab-case name',
      ],
      [
        { name: 'fixture-seed-tray' },
        '"fixture-seed-tray" is not a plural: name the resource as its route does, such as fixture-seed-trays',
      ],
      [
        { name: 'classes' },
        'would declare a variable named class, a reserved word',
      ],
      [
        { name: 'plants' },
        'src/modules/plants already exists: there is a plants module already',
      ],
      [{ name: 'docs' }, 'the route /docs is taken'],
      [
        { name: 'webhook-subscriptions' },
        'the table webhook_subscriptions exists already',
      ],
      [
        { name: 'errors' },
        'the schema Error is in the OpenAPI document already',
      ],
      [
        { type: 'graphql-code-first' },
        '--type=graphql-code-first is not supported',
      ],
      [{ crud: false }, '--crud=false is not supported'],
      [{ skipImport: true }, '--skip-import=true is not supported'],
      [{ specFileSuffix: 'test' }, '--spec-file-suffix=test is not supported'],
      [
        { id: 'serial' },
        '--id must be int64 (chosen by the client) or uuid (made by the service), got serial',
      ],
      [{ path: '../elsewhere' }, 'the path must be a folder under src/modules'],
      [
        { postgresUrl: 'postgres://postgres@127.0.0.1:1/postgres' },
        'cannot generate the PostgreSQL migration: no PostgreSQL server answers at 127.0.0.1:1',
      ],
    ])('%j', async (extra, message) => {
      const tree = projectTree();
      const files = tree.files.length;
      await expect(run(extra, tree)).rejects.toThrow(message);
      expect(tree.files).toHaveLength(files);
      expect(tree.readContent('src/app.module.ts')).toBe(APP_MODULE);
    });

    it('a second run for the same resource', async () => {
      const once = await run();
      await expect(run({}, once)).rejects.toThrow(
        'src/modules/fixture-seed-trays already exists: there is a fixture-seed-trays module already (the generator runs once per resource)',
      );
    });
  });

  describe('nest g entity and nest g action, into the module fixture-seed-trays', () => {
    const folder = 'src/modules/fixture-seed-trays';
    const moduleFile = `${folder}/fixture-seed-trays.module.ts`;
    const newFiles = (tree: UnitTestTree, before: Map<string, string>) =>
      tree.files.filter((file) => !before.has(file)).sort();
    /**
     * `nest g <schematic> <name> fixture-seed-trays` after `nest g resource fixture-seed-trays`:
     * the tree, what it held before, the module file then, and the files it added.
     */
    const generateInto = async (schematic: string, name: string) => {
      const base = await run();
      const before = new Map(
        base.files.map((file) => [file, base.readContent(file)]),
      );
      const moduleBefore = base.readContent(moduleFile);
      const tree = await runner.runSchematic(
        schematic,
        options({ name, path: 'fixture-seed-trays' }),
        base,
      );
      const changed = [...before]
        .filter(([file, content]) => tree.readContent(file) !== content)
        .map(([file]) => file);
      return { tree, moduleBefore, added: newFiles(tree, before), changed };
    };
    /** Files of the module folder, and the e2e spec of `name`, as the tree lists them. */
    const moduleFilesAnd = (name: string, files: string[]) =>
      files
        .map((file) => `/${folder}/${file}`)
        .concat(`/test/${name}.e2e-spec.ts`)
        .sort();
    const newLines = (after: string, before: string) => {
      const original = before.split('\n');
      return after.split('\n').filter((line) => !original.includes(line));
    };

    it("writes a second entity's files into the module's folder, and changes only the module file", async () => {
      const { tree, moduleBefore, added, changed } = await generateInto(
        'entity',
        'fixture-soil-tests',
      );
      expect(added).toEqual(
        moduleFilesAnd('fixture-soil-tests', [
          'dto/create-fixture-soil-test.dto.ts',
          'dto/fixture-soil-test.dto.ts',
          'dto/list-fixture-soil-tests-query.dto.ts',
          'dto/update-fixture-soil-test.dto.ts',
          'fixture-soil-test.entity.ts',
          'fixture-soil-test.events.ts',
          'fixture-soil-tests.controller.ts',
          'fixture-soil-tests.service.spec.ts',
          'fixture-soil-tests.service.ts',
          `migrations/postgres/${TIMESTAMP}-AddFixtureSoilTests.ts`,
          `migrations/sqlite/${TIMESTAMP}-AddFixtureSoilTests.ts`,
        ]),
      );
      expect(changed).toEqual([`/${moduleFile}`]);
      expect(newLines(tree.readContent(moduleFile), moduleBefore)).toEqual([
        "import { FixtureSoilTest } from './fixture-soil-test.entity';",
        "import { FIXTURE_SOIL_TEST_ADDED } from './fixture-soil-test.events';",
        "import { FixtureSoilTestsController } from './fixture-soil-tests.controller';",
        "import { FixtureSoilTestsService } from './fixture-soil-tests.service';",
        '    TypeOrmModule.forFeature([FixtureSeedTray, FixtureSoilTest]),',
        '    EventsModule.forFeature([FIXTURE_SEED_TRAY_ADDED, FIXTURE_SOIL_TEST_ADDED]),',
        '  controllers: [FixtureSeedTraysController, FixtureSoilTestsController],',
        '  providers: [FixtureSeedTraysService, FixtureSoilTestsService],',
      ]);
      // guarded by the module's scopes, which it shares
      expect(
        tree.readContent(`${folder}/fixture-soil-tests.controller.ts`),
      ).toContain("@RequireScopes('fixture-seed-trays:write')");
      const [{ options: task }] = runner.tasks as {
        name: string;
        options: {
          name: string;
          options: { created: string[]; changed: Record<string, string> };
        };
      }[];
      expect(task.options.created.sort()).toEqual(
        added.map((file) => file.slice(1)),
      );
      expect(task.options.changed).toEqual({ [moduleFile]: moduleBefore });
    });

    it('writes an action: POST, its rule in one @Transactional() method, the record it keeps, its event and e2e spec', async () => {
      const { tree, moduleBefore, added, changed } = await generateInto(
        'action',
        'fixture-transfers',
      );
      expect(added).toEqual(
        moduleFilesAnd('fixture-transfers', [
          'dto/fixture-transfer.dto.ts',
          'dto/new-fixture-transfer.dto.ts',
          'fixture-transfer.entity.ts',
          'fixture-transfer.events.ts',
          'fixture-transfers.controller.ts',
          'fixture-transfers.service.ts',
          `migrations/postgres/${TIMESTAMP}-AddFixtureTransfers.ts`,
          `migrations/sqlite/${TIMESTAMP}-AddFixtureTransfers.ts`,
        ]),
      );
      expect(changed).toEqual([`/${moduleFile}`]);
      expect(newLines(tree.readContent(moduleFile), moduleBefore)).toContain(
        '    EventsModule.forFeature([FIXTURE_SEED_TRAY_ADDED, FIXTURE_TRANSFER_MADE]),',
      );
      const controller = tree.readContent(
        `${folder}/fixture-transfers.controller.ts`,
      );
      expect(controller).toContain(
        "@Post()\n  @HttpCode(HttpStatus.OK)\n  @RequireScopes('fixture-seed-trays:write')",
      );
      expect(controller).not.toMatch(/@(Get|Delete)\(/);
      const service = tree.readContent(
        `${folder}/fixture-transfers.service.ts`,
      );
      expect(service).toContain(
        '  @Transactional()\n  async make({ reference }: NewFixtureTransferDto): Promise<FixtureTransfer> {\n    if (await this.fixtureTransfers.existsBy({ reference })) {\n      throw new ConflictException(',
      );
      expect(service.replace(/\s+/g, ' ')).toContain(
        'await this.events.publish( FIXTURE_TRANSFER_MADE, withoutNulls(fixtureTransfer), );',
      );
      expect(
        tree.readContent(`${folder}/fixture-transfer.events.ts`),
      ).toContain("type: 'fixture-transfer.made',");
      expect(
        tree.readContent(
          `${folder}/migrations/postgres/${TIMESTAMP}-AddFixtureTransfers.ts`,
        ),
      ).toMatch(
        /CREATE TABLE "fixture_transfers" \("id" uuid NOT NULL, "reference" text NOT NULL[\s\S]*CREATE INDEX "\w+" ON "fixture_transfers"\s+\("reference"\)/,
      );
      expect(tree.readContent('test/fixture-transfers.e2e-spec.ts')).toContain(
        '20 requests race for one reference',
      );
    });

    it("declares the module's scopes with the entity when the module has none, and registers them", async () => {
      const tree = projectTree();
      tree.create(
        'src/modules/fixture-bare/fixture-bare.module.ts',
        "import { Module } from '@nestjs/common';\n\n@Module({})\nexport class FixtureBareModule {}\n",
      );
      const result = await runner.runSchematic(
        'entity',
        options({ name: 'fixture-soil-tests', path: 'fixture-bare' }),
        tree,
      );
      expect(
        result.exists('src/modules/fixture-bare/fixture-soil-test.scopes.ts'),
      ).toBe(true);
      expect(
        result.readContent('src/modules/fixture-bare/fixture-bare.module.ts'),
      ).toBe(
        [
          "import { Module } from '@nestjs/common';",
          "import { TypeOrmModule } from '@nestjs/typeorm';",
          "import { EventsModule } from '../../platform/events';",
          "import { ScopesModule } from '../../platform/auth';",
          "import { FIXTURE_SOIL_TEST_SCOPES } from './fixture-soil-test.scopes';",
          "import { FixtureSoilTest } from './fixture-soil-test.entity';",
          "import { FIXTURE_SOIL_TEST_ADDED } from './fixture-soil-test.events';",
          "import { FixtureSoilTestsController } from './fixture-soil-tests.controller';",
          "import { FixtureSoilTestsService } from './fixture-soil-tests.service';",
          '',
          '@Module({',
          '  imports: [',
          '    TypeOrmModule.forFeature([FixtureSoilTest]),',
          '    ScopesModule.forFeature(FIXTURE_SOIL_TEST_SCOPES),',
          '    EventsModule.forFeature([FIXTURE_SOIL_TEST_ADDED]),',
          '  ],',
          '  controllers: [FixtureSoilTestsController],',
          '  providers: [FixtureSoilTestsService],',
          '})',
          'export class FixtureBareModule {}',
          '',
        ].join('\n'),
      );
    });

    it.each([
      [
        'entity',
        { name: 'fixture-soil-tests', path: undefined },
        'nest g entity adds to an existing module: name its folder under src/modules (nest g entity fixture-soil-tests inventory), or make a module with nest g resource fixture-soil-tests',
      ],
      [
        'action',
        { name: 'fixture-transfers', path: 'fixture-nowhere' },
        'src/modules/fixture-nowhere has no module file (*.module.ts): nest g entity and nest g action add to an existing module; make one first with nest g resource',
      ],
      [
        'action',
        { name: 'fixture-transfers', path: 'fixture-catalogue' },
        "src/modules/fixture-catalogue has no module file (*.module.ts), but fixture-catalogue/fixture-garden-beds has one: name the module's own folder, as in nest g action fixture-transfers fixture-catalogue/fixture-garden-beds",
      ],
      ['entity', { name: 'docs' }, 'the route /docs is taken'],
      [
        'action',
        { name: 'fixture-seed-trays' },
        'test/fixture-seed-trays.e2e-spec.ts already exists',
      ],
      [
        'action',
        { name: 'fixture-transfers', path: 'webhooks' },
        'src/modules/webhooks has 2 module files (webhook-subscriptions.module.ts, webhooks.module.ts): name the folder of one of them',
      ],
      [
        'action',
        { name: 'fixture-transfers', path: 'fixture-shared' },
        'src/modules/fixture-shared/fixture-shared.module.ts: the imports of its @Module() is not an array written there, so the generator cannot add to it; add the new parts by hand',
      ],
    ])(
      'refuses nest g %s %j in one line, before writing anything',
      async (schematic, extra, message) => {
        const tree = await run();
        tree.create(
          'src/modules/fixture-shared/fixture-shared.module.ts',
          "import { Module } from '@nestjs/common';\nimport { COMMON_IMPORTS } from './common-imports';\n\n@Module({ imports: COMMON_IMPORTS })\nexport class FixtureSharedModule {}\n",
        );
        // where `nest g resource fixture-garden-beds fixture-catalogue` puts its module
        tree.create(
          'src/modules/fixture-catalogue/fixture-garden-beds/fixture-garden-beds.module.ts',
          "import { Module } from '@nestjs/common';\n\n@Module({})\nexport class FixtureGardenBedsModule {}\n",
        );
        const files = [...tree.files];
        const contents = files.map((file) => tree.readContent(file));
        await expect(
          runner.runSchematic(
            schematic,
            options({ path: 'fixture-seed-trays', ...extra }),
            tree,
          ),
        ).rejects.toThrow(message);
        expect(tree.files).toEqual(files);
        expect(files.map((file) => tree.readContent(file))).toEqual(contents);
      },
    );
  });

  describe('nest g job, into the module fixture-seed-trays', () => {
    it("writes the job's file, named after the module, and adds it to the module's providers", async () => {
      const base = await run();
      const before = new Map(
        base.files.map((file) => [file, base.readContent(file)]),
      );
      const tree = await runner.runSchematic(
        'job',
        { name: 'overdue', path: 'fixture-seed-trays', every: '5m' },
        base,
      );
      const job = tree.readContent(
        'src/modules/fixture-seed-trays/overdue.job.ts',
      );
      expect(job).toContain("@Job('fixture-seed-trays.overdue')");
      expect(job).toContain('export class OverdueJob implements PeriodicJob');
      expect(job).toContain("readonly schedule = { every: '5m' };");
      expect(job).toContain("from '../../platform/jobs';");
      const moduleFile = tree.readContent(
        'src/modules/fixture-seed-trays/fixture-seed-trays.module.ts',
      );
      expect(moduleFile).toContain(
        "import { OverdueJob } from './overdue.job';",
      );
      expect(moduleFile).toMatch(/providers: \[[^\]]*OverdueJob\]/);
      const changed = tree.files.filter(
        (file) => before.get(file) !== tree.readContent(file),
      );
      expect(changed.sort()).toEqual([
        '/src/modules/fixture-seed-trays/fixture-seed-trays.module.ts',
        '/src/modules/fixture-seed-trays/overdue.job.ts',
      ]);
    });

    it.each([
      [
        { name: 'Overdue', path: 'fixture-seed-trays' },
        '"Overdue" is not a job name',
      ],
      [
        { name: 'overdue', path: undefined },
        'nest g job adds to an existing module: name its folder under src/modules (nest g job overdue inventory)',
      ],
      [
        { name: 'overdue', path: 'fixture-nowhere' },
        'src/modules/fixture-nowhere has no module file (*.module.ts)',
      ],
    ])('refuses %j in one line, writing nothing', async (options, message) => {
      const tree = await run();
      const files = [...tree.files];
      await expect(runner.runSchematic('job', options, tree)).rejects.toThrow(
        message,
      );
      expect(tree.files).toEqual(files);
    });
  });

  describe('generate:field, into the module fixture-seed-trays', () => {
    it.each([
      [
        { name: 'Notes', type: 'text', nullable: true },
        '"Notes" is not a field name',
      ],
      [
        { name: 'notes', type: 'date', nullable: true },
        '--type must be one of text, integer, boolean, date-time, int64, got "date"',
      ],
      [
        { name: 'plantedOn', type: 'date-time', default: 'now' },
        'a date-time field takes --nullable, not --default',
      ],
      [
        { name: 'notes', type: 'text' },
        'a new field needs --nullable or --default <value>, one of the two',
      ],
      [
        { name: 'rows', type: 'integer', default: 'many' },
        '--default many is not a value of type integer',
      ],
      [
        { name: 'name', type: 'text', nullable: true },
        'has a field name already',
      ],
      [
        {
          name: 'notes',
          type: 'text',
          nullable: true,
          path: 'fixture-nowhere',
        },
        'src/modules/fixture-nowhere has no entity (*.entity.ts)',
      ],
    ])('refuses %j in one line, writing nothing', async (options, message) => {
      const tree = await run();
      const contents = tree.files.map((file) => tree.readContent(file));
      await expect(
        runner.runSchematic(
          'field',
          { path: 'fixture-seed-trays', ...options },
          tree,
        ),
      ).rejects.toThrow(message);
      expect(tree.files.map((file) => tree.readContent(file))).toEqual(
        contents,
      );
    });
  });

  // on the plants module, whose migrations are on disk: each step's migration is TypeORM's
  // difference between its entity as the step leaves it and the schema they make
  describe('remove:field, from the plants module', () => {
    const removeField = (extra: Record<string, unknown>, tree: UnitTestTree) =>
      runner.runSchematic(
        'remove-field',
        {
          path: 'plants',
          timestamp: TIMESTAMP,
          postgresUrl: POSTGRES_ADMIN_URL,
          contract: false,
          ...extra,
        },
        tree,
      );
    const PLANTS = 'src/modules/plants';
    let tree: UnitTestTree;
    let warnings: string[];

    beforeAll(async () => {
      warnings = [];
      const subscription = runner.logger.subscribe(({ level, message }) => {
        if (level === 'warn') warnings.push(message);
      });
      try {
        tree = await removeField({ name: 'name' }, projectTree());
      } finally {
        subscription.unsubscribe();
      }
    });

    it('takes a required field out of the API: out of both DTOs and their imports, its column kept but neither read nor written', () => {
      const entity = tree.readContent(`${PLANTS}/plant.entity.ts`);
      expect(entity).toContain(
        "@Column({\n    type: 'text',\n    nullable: true,\n    select: false,\n    insert: false,\n    update: false,\n  })\n  name?: string;",
      );
      expect(entity).toContain('`npm run remove:field -- name plants --drop`');
      for (const dto of ['plant.dto.ts', 'create-plant.dto.ts']) {
        expect(tree.readContent(`${PLANTS}/dto/${dto}`)).not.toMatch(
          /^\s+name[!?]?:/m,
        );
      }
      // what only name used goes; what tag uses stays
      const create = tree.readContent(`${PLANTS}/dto/create-plant.dto.ts`);
      expect(create).not.toContain('MaxLength');
      expect(create).toContain('MaxUtf8Bytes');
      expect(create).toContain('tag?: string;');
    });

    it('makes the column nullable by a migration, so that inserts leaving it out go through beside the release before', () => {
      expect(
        tree.readContent(
          `${PLANTS}/migrations/postgres/${TIMESTAMP}-ReleaseNameOfPlant.ts`,
        ),
      ).toContain('ALTER TABLE "plants" ALTER COLUMN "name" DROP NOT NULL');
      expect(
        tree.readContent(
          `${PLANTS}/migrations/sqlite/${TIMESTAMP}-ReleaseNameOfPlant.ts`,
        ),
      ).toContain('"name" text, "tag" text');
    });

    it('names the files of the module that still name the field', () => {
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(
        /^name is still named in .*src\/modules\/plants\/plants\.service\.ts.*: a request that sends it is now refused \(400\)/,
      );
    });

    it('refuses to take a field out twice, and says how to drop it', async () => {
      await expect(removeField({ name: 'name' }, tree)).rejects.toThrow(
        'name is out of the API already; drop its column in the next release: npm run remove:field -- name plants --drop',
      );
    });

    it('with --drop, in the release after, drops the column, in place on SQLite', async () => {
      const dropped = await removeField(
        { name: 'name', drop: true, timestamp: TIMESTAMP + 1 },
        tree,
      );
      expect(dropped.readContent(`${PLANTS}/plant.entity.ts`)).not.toMatch(
        /\bname\?:/,
      );
      const migration = (engine: string) =>
        dropped.readContent(
          `${PLANTS}/migrations/${engine}/${TIMESTAMP + 1}-DropNameFromPlant.ts`,
        );
      expect(migration('postgres')).toContain(
        'ALTER TABLE "plants" DROP COLUMN "name"',
      );
      expect(migration('sqlite')).toContain(
        'ALTER TABLE "plants" DROP COLUMN "name"',
      );
      expect(migration('sqlite')).not.toContain('temporary_plants');
    });

    it.each([
      [
        { name: 'tag', drop: true },
        'tag is still read and written: take it out of the API first (npm run remove:field -- tag plants)',
      ],
      [{ name: 'id' }, 'id is the primary key of Plant'],
      [{ name: 'version' }, 'version is the version (the ETag) of Plant'],
      [
        { name: 'colour' },
        'src/modules/plants/plant.entity.ts has no field colour',
      ],
      [
        { name: 'tag', path: 'fixture-nowhere' },
        'src/modules/fixture-nowhere has no entity (*.entity.ts)',
      ],
    ])('refuses %j in one line, writing nothing', async (options, message) => {
      const before = projectTree();
      const contents = before.files.map((file) => before.readContent(file));
      await expect(removeField(options, before)).rejects.toThrow(message);
      expect(before.files.map((file) => before.readContent(file))).toEqual(
        contents,
      );
    });
  });

  describe('resource-contract, when regenerating the contract fails', () => {
    let folder: string;
    const cwd = process.cwd();

    beforeEach(() => {
      folder = mkdtempSync(join(tmpdir(), 'plant-store-contract-'));
      writeFileSync(
        join(folder, 'package.json'),
        JSON.stringify({
          scripts: {
            // it writes the plugin's metadata before the build that fails
            'openapi:generate':
              'echo rewritten > src/metadata.ts; echo "src/modules/fixture-seed-trays/x.ts(1,1): error TS2304: Cannot find name" >&2; exit 2',
          },
        }),
      );
      mkdirSync(join(folder, 'src/modules/fixture-seed-trays/dto'), {
        recursive: true,
      });
      mkdirSync(join(folder, 'src/modules/kept'), { recursive: true });
      for (const file of [
        'src/modules/fixture-seed-trays/a.ts',
        'src/modules/fixture-seed-trays/dto/b.ts',
        'src/modules/kept/c.ts',
        'src/app.module.ts',
      ]) {
        writeFileSync(join(folder, file), 'written');
      }
      writeFileSync(join(folder, 'src/metadata.ts'), 'metadata before');
      process.chdir(folder);
    });

    afterEach(() => {
      process.chdir(cwd);
      rmSync(folder, { recursive: true, force: true });
    });

    it('removes what the resource wrote, restores what it changed, and says why in one line', async () => {
      await expect(
        runner.runSchematic(
          'resource-contract',
          {
            created: [
              'src/modules/fixture-seed-trays/a.ts',
              'src/modules/fixture-seed-trays/dto/b.ts',
              'src/modules/kept/c.ts',
            ],
            changed: { 'src/app.module.ts': 'original' },
          },
          new HostTree() as unknown as UnitTestTree,
        ),
      ).rejects.toThrow(
        'npm run openapi:generate failed, so nothing was generated (src/modules/fixture-seed-trays/x.ts(1,1): error TS2304: Cannot find name); the written files are removed',
      );
      const left = (path: string) => existsSync(join(folder, path));
      expect(left('src/modules/fixture-seed-trays')).toBe(false);
      expect(left('src/modules/kept')).toBe(false);
      expect(readFileSync(join(folder, 'src/app.module.ts'), 'utf8')).toBe(
        'original',
      );
      expect(readFileSync(join(folder, 'src/metadata.ts'), 'utf8')).toBe(
        'metadata before',
      );
    });
  });
});
