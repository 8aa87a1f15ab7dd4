import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { databaseReader } from './helpers/test-app';
import { eventually } from './helpers/webhook-receiver';
import {
  startServiceProcess,
  type ServiceProcess,
} from './helpers/service-process';

// `nest g resource garden-beds` (and a module with UUIDs beside it, then a second entity and
// an action in garden-beds) in a copy of the repository, then everything a developer runs
// before committing, on the generated code with no hand edit: lint, format, build, the
// contract check, the module's own e2e spec on both engines, and the built service over HTTP
// (jest.slow.config.js, `npm run test:slow`; CI runs it).
const ROOT = join(__dirname, '..');
// what git does not track, and the copy must not carry
const NOT_COPIED = new Set([
  '.git',
  'node_modules',
  'dist',
  'data',
  'coverage',
  'reports',
  '.stryker-tmp',
  'test-artifacts',
  // the developer's own settings
  '.env',
]);

describe('nest g resource garden-beds, in a copy of the repository', () => {
  let copy: string;
  const postgresUrl =
    process.env.TEST_DATABASE_URL ??
    'postgres://postgres@127.0.0.1:5432/postgres';
  // the developer's environment stays out: only what the commands need
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    npm_config_nodedir: process.env.npm_config_nodedir ?? '',
    TEST_DATABASE_URL: postgresUrl,
    GENERATOR_DATABASE_URL: postgresUrl,
    ...(process.env.CI && { CI: process.env.CI }),
  };
  const run = (command: string, ...args: string[]): SpawnSyncReturns<string> =>
    spawnSync(command, args, {
      cwd: copy,
      env,
      encoding: 'utf8',
      timeout: 10 * 60_000,
    });
  const passes = (result: SpawnSyncReturns<string>) => {
    if (result.status !== 0) {
      throw new Error(
        `${result.stdout}\n${result.stderr}\nexited with ${result.status}`,
      );
    }
    return result;
  };
  const inCopy = (path: string) => readFileSync(join(copy, path), 'utf8');
  const generateField = (...args: string[]) =>
    passes(run('npm', 'run', '--silent', 'generate:field', '--', ...args));
  const filesUnder = (folder: string): string[] =>
    readdirSync(join(copy, folder), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => relative(copy, join(entry.parentPath, entry.name)))
      .sort();

  beforeAll(() => {
    copy = mkdtempSync(join(tmpdir(), 'plant-store-generated-'));
    cpSync(ROOT, copy, {
      recursive: true,
      filter: (source) =>
        source === ROOT ||
        !NOT_COPIED.has(relative(ROOT, source).split('/')[0]),
    });
    symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
  });

  afterAll(() => rmSync(copy, { recursive: true, force: true }));

  it('shows every file it would write or change with --dry-run, and writes none', () => {
    const appModule = inCopy('src/app.module.ts');
    const dryRun = passes(
      run('npx', 'nest', 'g', 'resource', 'garden-beds', '--dry-run'),
    );
    const listed = [
      ...stripVTControlCharacters(dryRun.stdout).matchAll(
        /^(CREATE|UPDATE) (\S+)/gm,
      ),
    ].map(([, action, path]) => `${action} ${path}`);
    expect(listed).toEqual(
      expect.arrayContaining([
        'CREATE src/modules/garden-beds/garden-beds.module.ts',
        'CREATE src/modules/garden-beds/garden-beds.controller.ts',
        'CREATE src/modules/garden-beds/garden-beds.service.ts',
        'CREATE src/modules/garden-beds/garden-bed.entity.ts',
        'CREATE test/garden-beds.e2e-spec.ts',
        'UPDATE src/app.module.ts',
      ]),
    );
    expect(listed.filter((line) => line.includes('/migrations/'))).toEqual([
      expect.stringMatching(
        /^CREATE src\/modules\/garden-beds\/migrations\/sqlite\/\d+-AddGardenBeds\.ts$/,
      ),
      expect.stringMatching(
        /^CREATE src\/modules\/garden-beds\/migrations\/postgres\/\d+-AddGardenBeds\.ts$/,
      ),
    ]);
    expect(dryRun.stdout).toContain(
      'regenerate src/metadata.ts, openapi/service.yaml, clients/typescript/',
    );
    expect(existsSync(join(copy, 'src/modules/garden-beds'))).toBe(false);
    expect(inCopy('src/app.module.ts')).toBe(appModule);
  });

  it('writes the module, its migrations, its tests and its contract in one command', () => {
    const started = Date.now();
    const generated = passes(
      run('npx', 'nest', 'g', 'resource', 'garden-beds'),
    );
    process.stdout.write(
      `nest g resource garden-beds took ${Date.now() - started} ms\n`,
    );
    expect(generated.stderr).toBe('');
    expect(filesUnder('src/modules/garden-beds')).toHaveLength(13);
    expect(inCopy('openapi/service.yaml')).toContain('  /garden-beds/{id}:');
    expect(inCopy('clients/typescript/schema.d.ts')).toContain(
      '"/garden-beds/{id}"',
    );
  });

  it('writes a module with service-made UUIDs with --id uuid', () => {
    passes(
      run(
        'npm',
        'run',
        'generate:resource',
        '--',
        'seed-trays',
        '--id',
        'uuid',
      ),
    );
    expect(inCopy('src/modules/seed-trays/seed-tray.entity.ts')).toContain(
      "@PrimaryColumn({ type: 'uuid' })",
    );
  });

  it('adds a second entity, with its routes, to the garden-beds module with nest g entity', () => {
    const module = 'src/modules/garden-beds/garden-beds.module.ts';
    const before = inCopy(module);
    const generated = passes(
      run('npx', 'nest', 'g', 'entity', 'soil-tests', 'garden-beds'),
    );
    expect(generated.stderr).toBe('');
    expect(filesUnder('src/modules/garden-beds')).toEqual(
      expect.arrayContaining([
        'src/modules/garden-beds/soil-test.entity.ts',
        'src/modules/garden-beds/soil-tests.controller.ts',
        'src/modules/garden-beds/soil-tests.service.ts',
      ]),
    );
    // no module of its own: the one there gains it
    expect(
      existsSync(join(copy, 'src/modules/garden-beds/soil-tests.module.ts')),
    ).toBe(false);
    const after = inCopy(module);
    expect(after).not.toBe(before);
    expect(after).toContain('TypeOrmModule.forFeature([GardenBed, SoilTest])');
    expect(inCopy('openapi/service.yaml')).toContain('  /soil-tests/{id}:');
  });

  it('adds an action, POST /plantings with its rule in one transaction, with nest g action', () => {
    passes(run('npx', 'nest', 'g', 'action', 'plantings', 'garden-beds'));
    expect(inCopy('src/modules/garden-beds/plantings.service.ts')).toContain(
      '  @Transactional()\n  async make(',
    );
    expect(inCopy('src/modules/garden-beds/garden-beds.module.ts')).toContain(
      'providers: [GardenBedsService, SoilTestsService, PlantingsService]',
    );
    expect(inCopy('openapi/service.yaml')).toContain('  /plantings:');
  });

  it('adds a field to garden beds in one command (npm run generate:field), which the checks below then cover', () => {
    const before = new Set(filesUnder('src/modules/garden-beds'));
    generateField('notes', 'garden-beds', '--type', 'text', '--nullable');
    const added = filesUnder('src/modules/garden-beds').filter(
      (file) => !before.has(file),
    );
    expect(added.map((file) => file.replace(/\d{13}/, 'T')).sort()).toEqual([
      'src/modules/garden-beds/migrations/postgres/T-AddNotesToGardenBed.ts',
      'src/modules/garden-beds/migrations/sqlite/T-AddNotesToGardenBed.ts',
    ]);
    const entity = inCopy('src/modules/garden-beds/garden-bed.entity.ts');
    expect(entity).toContain(
      "@Column({ type: 'text', nullable: true })\n  notes!: string | null;",
    );
    // in place, where TypeORM would rebuild the table
    expect(
      readFileSync(
        join(copy, added.find((file) => file.includes('sqlite'))!),
        'utf8',
      ),
    ).toContain('ALTER TABLE "garden_beds" ADD COLUMN "notes" text');
    expect(inCopy('openapi/service.yaml')).toMatch(
      /NewGardenBed:[\s\S]*?notes:/,
    );
  });

  it('adds a date-time field, and one the service sets, which no request may send', () => {
    generateField(
      'plantedOn',
      'garden-beds',
      '--type',
      'date-time',
      '--nullable',
    );
    generateField(
      'checkedAt',
      'garden-beds',
      '--type',
      'date-time',
      '--nullable',
      '--server-set',
    );
    const entity = inCopy('src/modules/garden-beds/garden-bed.entity.ts');
    expect(entity).toContain(
      "@Column({ type: Date, name: 'planted_on', nullable: true })\n  plantedOn!: Date | null;",
    );
    expect(entity).toContain('checkedAt!: Date | null;');
    const answer = inCopy('src/modules/garden-beds/dto/garden-bed.dto.ts');
    expect(answer).toContain('checkedAt?: Date;');
    const create = inCopy(
      'src/modules/garden-beds/dto/create-garden-bed.dto.ts',
    );
    expect(create).toContain('@IsDateTime()');
    expect(create).toContain('plantedOn?: Date;');
    expect(create).not.toContain('checkedAt');
    expect(inCopy('openapi/service.yaml')).toMatch(
      /GardenBedChanges:[\s\S]*?plantedOn:[\s\S]*?format: date-time/,
    );
  });

  it('takes the notes field out of the API in one command (npm run remove:field), keeping its column unread and unwritten for the release after', () => {
    const before = new Set(filesUnder('src/modules/garden-beds'));
    passes(
      run(
        'npm',
        'run',
        '--silent',
        'remove:field',
        '--',
        'notes',
        'garden-beds',
      ),
    );
    // a nullable column: the inserts that leave it out need no migration
    expect(
      filesUnder('src/modules/garden-beds').filter((file) => !before.has(file)),
    ).toEqual([]);
    expect(inCopy('src/modules/garden-beds/garden-bed.entity.ts')).toContain(
      "@Column({\n    type: 'text',\n    nullable: true,\n    select: false,\n    insert: false,\n    update: false,\n  })\n  notes?: string | null;",
    );
    for (const dto of ['garden-bed.dto.ts', 'create-garden-bed.dto.ts']) {
      expect(inCopy(`src/modules/garden-beds/dto/${dto}`)).not.toContain(
        'notes',
      );
    }
    // in no schema of the contract, which had it in three (the bed, a new one, its changes)
    expect(inCopy('openapi/service.yaml')).not.toMatch(/^\s+notes:/m);
  });

  it('adds a periodic job to garden beds with nest g job, which the built service below runs', () => {
    passes(run('npx', 'nest', 'g', 'job', 'overdue', 'garden-beds'));
    expect(inCopy('src/modules/garden-beds/overdue.job.ts')).toContain(
      "@Job('garden-beds.overdue')",
    );
    expect(inCopy('src/modules/garden-beds/garden-beds.module.ts')).toMatch(
      /providers: \[[^\]]*OverdueJob/,
    );
  });

  // the rest of the care module of docs/adding-a-module.md, written by hand in the folder as
  // its "Settings" and "Reacting to events" show: nothing outside it is edited by hand
  it('takes a setting and a reaction to plant.deleted in the garden-beds folder alone, by the documented conventions', () => {
    generateField('plantId', 'garden-beds', '--type', 'int64', '--nullable');
    const folder = join(copy, 'src/modules/garden-beds');
    writeFileSync(
      join(folder, 'garden-beds.settings.ts'),
      `import { defineSettings, setting } from '../../platform/config';

export const gardenBedsSettings = defineSettings('garden-beds', {
  GARDEN_BEDS_OVERDUE_INTERVAL: setting.duration({
    default: '1h',
    example: '5m',
    description: 'How often garden beds past their due date are looked for',
  }),
});
`,
    );
    writeFileSync(
      join(folder, 'clear-deleted-plants.ts'),
      `import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import {
  EventHandler,
  type HandledEvent,
  type HandlesEvents,
} from '../../platform/events';
import { CreatePlantDto } from '../plants/dto/create-plant.dto';
import { PLANT_DELETED } from '../plants/plant.events';
import { GardenBed } from './garden-bed.entity';

/** A deleted plant is no bed's plant any more. */
@EventHandler('garden-beds.plant-deleted', [PLANT_DELETED])
export class ClearDeletedPlants implements HandlesEvents<CreatePlantDto> {
  constructor(
    @InjectRepository(GardenBed) private readonly beds: Repository<GardenBed>,
  ) {}

  async handle({ payload }: HandledEvent<CreatePlantDto>): Promise<void> {
    await this.beds.update({ plantId: payload.id }, { plantId: null });
  }
}
`,
    );
    const edit = (file: string, change: (source: string) => string) => {
      const path = join(folder, file);
      const before = readFileSync(path, 'utf8');
      const after = change(before);
      expect(after).not.toBe(before);
      writeFileSync(path, after);
    };
    edit(
      'garden-beds.module.ts',
      (source) =>
        `import { ConfigModule } from '@nestjs/config';\n` +
        `import { ClearDeletedPlants } from './clear-deleted-plants';\n` +
        `import { gardenBedsSettings } from './garden-beds.settings';\n` +
        source
          .replace(
            'imports: [',
            'imports: [ConfigModule.forFeature(gardenBedsSettings), ',
          )
          .replace('providers: [', 'providers: [ClearDeletedPlants, '),
    );
    edit(
      'overdue.job.ts',
      (source) =>
        `import { Inject } from '@nestjs/common';\n` +
        `import type { ConfigType } from '@nestjs/config';\n` +
        `import { gardenBedsSettings } from './garden-beds.settings';\n` +
        source.replace(
          /readonly schedule = \{ every: '[^']+' \};/,
          `readonly schedule: { every: number };

  constructor(
    @Inject(gardenBedsSettings.KEY)
    settings: ConfigType<typeof gardenBedsSettings>,
  ) {
    this.schedule = { every: settings.GARDEN_BEDS_OVERDUE_INTERVAL };
  }`,
        ),
    );
    passes(run('npx', 'prettier', '--write', 'src/modules/garden-beds'));
    passes(run('npm', 'run', '--silent', 'config:generate'));
    expect(inCopy('.env.example')).toContain('GARDEN_BEDS_OVERDUE_INTERVAL=');
    expect(inCopy('docs/configuration.md')).toContain(
      '`GARDEN_BEDS_OVERDUE_INTERVAL`',
    );
  });

  it('refuses a second run in one line, exits non-zero, and changes nothing', () => {
    const before = filesUnder('src');
    const again = run(
      'npm',
      'run',
      '--silent',
      'generate:resource',
      '--',
      'garden-beds',
    );
    expect(again.status).not.toBe(0);
    expect(stripVTControlCharacters(again.stderr).trim()).toBe(
      'Error: src/modules/garden-beds already exists: there is a garden-beds module already (the generator runs once per resource)',
    );
    expect(filesUnder('src')).toEqual(before);
  });

  it('passes lint and the format check, as handwritten code must', () => {
    passes(run('npm', 'run', 'lint'));
    passes(run('npm', 'run', 'format:check'));
  });

  it('builds; the document matches the reference and the committed contract; the migrations match the entities', () => {
    passes(run('npm', 'run', 'build'));
    passes(run('node', 'scripts/generate-contract.mjs', '--check'));
    // database-schema runs `migration:generate --check` on both engines
    passes(
      run(
        'npx',
        'jest',
        '--selectProjects',
        'e2e',
        '--',
        'test/openapi.e2e-spec.ts',
      ),
    );
    passes(
      run(
        'npx',
        'jest',
        '-c',
        'jest.slow.config.js',
        '--',
        'test/database-schema.slow-spec.ts',
      ),
    );
  });

  it("passes the modules' own e2e specs on SQLite and on PostgreSQL, the entity's and the action's with them", () => {
    const e2e = passes(
      run(
        'npx',
        'jest',
        '--selectProjects',
        'e2e',
        'e2e-postgres',
        '--',
        'test/garden-beds.e2e-spec.ts',
        'test/seed-trays.e2e-spec.ts',
        'test/soil-tests.e2e-spec.ts',
        'test/plantings.e2e-spec.ts',
        // the module's setting: in .env.example and the docs, with another value for CI
        'test/settings.e2e-spec.ts',
      ),
    );
    expect(e2e.stderr).toContain('PASS e2e test/settings.e2e-spec.ts');
    for (const project of ['e2e', 'e2e-postgres']) {
      for (const name of [
        'garden-beds',
        'seed-trays',
        'soil-tests',
        'plantings',
      ]) {
        expect(e2e.stderr).toContain(
          `PASS ${project} test/${name}.e2e-spec.ts`,
        );
      }
    }
  });

  describe('the built service', () => {
    let service: ServiceProcess;
    let tokens: Record<
      'reader' | 'writer' | 'plantsReader' | 'plantsWriter',
      string
    >;

    beforeAll(async () => {
      const serviceEnv = {
        ...env,
        DATABASE_URL: `sqlite:${join(copy, 'data', 'slow-test.sqlite')}`,
      };
      service = await startServiceProcess(
        serviceEnv,
        copy,
        join(copy, 'dist', 'main.js'),
      );
      const token = (scopes: string) =>
        passes(
          spawnSync(
            process.execPath,
            [
              'dist/cli.js',
              'tokens',
              'create',
              '--name',
              scopes,
              '--scopes',
              scopes,
            ],
            { cwd: copy, env: serviceEnv, encoding: 'utf8' },
          ),
        )
          .stdout.trim()
          .split('\n')
          .pop()!;
      tokens = {
        reader: token('garden-beds:read'),
        writer: token('garden-beds:write'),
        plantsReader: token('plants:read'),
        plantsWriter: token('plants:write'),
      };
    });

    afterAll(async () => {
      service.child.kill('SIGTERM');
      await service.exited;
    });

    const call = (method: string, path: string, token: string, body?: object) =>
      fetch(`${service.baseUrl}${path}`, {
        method,
        headers: {
          Authorization: `Bearer ${token}`,
          ...(body && { 'Content-Type': 'application/json' }),
        },
        body: body && JSON.stringify(body),
      });

    it('creates, lists, reads and deletes a garden bed with tokens of the new scopes', async () => {
      const created = await call('POST', '/garden-beds', tokens.writer, {
        id: 42,
        name: 'North garden bed',
      });
      // 201 and where it is, as RFC 9110 has it (only the plants keep their spec's 200)
      expect([
        created.status,
        created.headers.get('location'),
        await created.text(),
      ]).toEqual([
        201,
        `${service.baseUrl}/garden-beds/42`,
        '{"id":42,"name":"North garden bed","version":1}',
      ]);
      const list = await call('GET', '/garden-beds', tokens.reader);
      expect([list.status, await list.text()]).toEqual([
        200,
        '[{"id":42,"name":"North garden bed","version":1}]',
      ]);
      const read = await call('GET', '/garden-beds/42', tokens.reader);
      expect(read.status).toBe(200);
      expect(
        (await call('DELETE', '/garden-beds/42', tokens.writer)).status,
      ).toBe(204);
      expect((await call('GET', '/garden-beds/42', tokens.reader)).status).toBe(
        404,
      );
    });

    it('stores a date-time field as the instant sent, writes it in UTC, refuses one without its offset, and ignores a field the service sets', async () => {
      const planted = await call('POST', '/garden-beds', tokens.writer, {
        id: 44,
        name: 'East garden bed',
        plantedOn: '2026-11-26T10:30:00+01:00',
        checkedAt: '2026-11-27T00:00:00Z',
      });
      expect([planted.status, await planted.json()]).toEqual([
        201,
        {
          id: 44,
          name: 'East garden bed',
          plantedOn: '2026-11-26T09:30:00.000Z',
          version: 1,
        },
      ]);
      const read = await call('GET', '/garden-beds/44', tokens.reader);
      expect(await read.json()).toMatchObject({
        plantedOn: '2026-11-26T09:30:00.000Z',
      });
      const refused = await call('POST', '/garden-beds', tokens.writer, {
        id: 45,
        name: 'West garden bed',
        plantedOn: '2026-11-26',
      });
      expect([refused.status, await refused.json()]).toEqual([
        400,
        {
          error: 400,
          message:
            'plantedOn must be a date and time with its offset, such as 2026-11-26T09:30:00Z',
        },
      ]);
    });

    it("serves the module's second entity and its action with the module's tokens", async () => {
      const added = await call('POST', '/soil-tests', tokens.writer, {
        id: 7,
        name: 'Spring soil test',
      });
      expect(added.status).toBe(201);
      expect((await call('GET', '/soil-tests/7', tokens.reader)).status).toBe(
        200,
      );
      const made = await call('POST', '/plantings', tokens.writer, {
        reference: 'spring-2026',
      });
      expect(made.status).toBe(200);
      expect(await made.json()).toMatchObject({ reference: 'spring-2026' });
      const again = await call('POST', '/plantings', tokens.writer, {
        reference: 'spring-2026',
      });
      expect([again.status, await again.json()]).toEqual([
        409,
        {
          error: 409,
          message: 'a planting with reference "spring-2026" was made already',
        },
      ]);
    });

    it("runs the generated job's tick, once, on the service's job schedule", async () => {
      const database = databaseReader(
        'sqlite',
        join(copy, 'data', 'slow-test.sqlite'),
      );
      try {
        const [job] = await eventually(
          () =>
            database.query<{ done_tick: string | null; last_outcome: string }>(
              "SELECT done_tick, last_outcome FROM scheduled_jobs WHERE name = 'garden-beds.overdue'",
              [],
            ),
          (rows) => rows[0]?.done_tick != null,
        );
        expect(job.last_outcome).toBe('done');
      } finally {
        await database.close();
      }
    });

    it("clears a deleted plant from its garden beds, by the module's own handler of plant.deleted", async () => {
      expect(
        (
          await call('POST', '/plants', tokens.plantsWriter, {
            id: 9,
            name: 'Basil',
          })
        ).status,
      ).toBe(200);
      const bed = await call('POST', '/garden-beds', tokens.writer, {
        id: 43,
        name: 'Herb garden bed',
        plantId: 9,
      });
      expect([bed.status, await bed.json()]).toEqual([
        201,
        expect.objectContaining({ plantId: 9 }),
      ]);
      expect(
        (await call('DELETE', '/plants/9', tokens.plantsWriter)).status,
      ).toBe(204);
      const cleared = await eventually(
        async () =>
          (await (
            await call('GET', '/garden-beds/43', tokens.reader)
          ).json()) as { plantId?: number },
        (read) => read.plantId === undefined,
      );
      expect(cleared).toMatchObject({ id: 43, name: 'Herb garden bed' });
    });

    it('refuses a plants:read token on every route of the new module with 403', async () => {
      for (const [method, path, body] of [
        ['GET', '/garden-beds'],
        ['POST', '/garden-beds', { id: 1, name: 'x' }],
        ['GET', '/garden-beds/1'],
        ['DELETE', '/garden-beds/1'],
        ['GET', '/soil-tests'],
        ['POST', '/plantings', { reference: 'x' }],
      ] as const) {
        const response = await call(method, path, tokens.plantsReader, body);
        expect([method, path, response.status]).toEqual([method, path, 403]);
        expect(await response.json()).toMatchObject({ error: 403 });
      }
    });
  });
});
