import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import {
  ROOT,
  runCliProcess,
  runNodeScript,
  startServiceProcess,
  type ServiceProcess,
} from './helpers/service-process';
import { makeTempFolder } from './helpers/test-app';

// docs/client.md, "A typed client": the client as another repository gets it, from the packed
// tarball into a project of its own, against the built service
describe('the typed client as a package (npm run client:pack)', () => {
  let folder: ReturnType<typeof makeTempFolder>;
  let project: string;
  let service: ServiceProcess;
  let token: string;

  beforeAll(async () => {
    folder = makeTempFolder();
    const databaseUrl = `sqlite:${join(folder.path, 'store.sqlite')}`;
    service = await startServiceProcess({ DATABASE_URL: databaseUrl });
    token = (
      await runCliProcess(['tokens', 'create', '--name', 'client'], {
        DATABASE_URL: databaseUrl,
      })
    ).lastLine;
    const packed = await runNodeScript(
      [join(ROOT, 'scripts', 'pack-client.js'), folder.path],
      {},
      ROOT,
    );
    expect(packed.stderr).toBe('');
    project = join(folder.path, 'project');
    mkdirSync(project);
    writeFileSync(
      join(project, 'package.json'),
      '{ "name": "another-repository", "private": true }\n',
    );
    // its dependencies as the registry serves them, packed from this repository's own install:
    // the test needs no network (a user's npm fetches them)
    const npm = (args: string[], cwd: string) =>
      spawnSync('npm', args, {
        cwd,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
        encoding: 'utf8',
        timeout: 120_000,
      });
    const tarballs = [packed.stdout.trim()];
    for (const dependency of [
      'lossless-json',
      'openapi-fetch',
      'openapi-typescript-helpers',
    ]) {
      const dependencyPacked = npm(
        [
          'pack',
          '--json',
          '--ignore-scripts',
          '--pack-destination',
          folder.path,
          join(ROOT, 'node_modules', dependency),
        ],
        folder.path,
      );
      expect(dependencyPacked.status).toBe(0);
      const [{ filename }] = JSON.parse(dependencyPacked.stdout) as {
        filename: string;
      }[];
      tarballs.push(join(folder.path, filename));
    }
    const installed = npm(
      ['install', '--offline', '--no-audit', '--no-fund', ...tarballs],
      project,
    );
    expect(installed.stderr).not.toMatch(/npm error/);
    expect(installed.status).toBe(0);
  }, 120_000);

  afterAll(async () => {
    service?.child.kill('SIGTERM');
    await service?.exited;
    folder?.remove();
  });

  const run = (file: string, code?: string) => {
    if (code !== undefined) writeFileSync(join(project, file), code);
    return runNodeScript(
      [file],
      { TOKEN: token, BASE: service.baseUrl },
      project,
    );
  };

  it("carries the contract's version", () => {
    const contract = load(
      readFileSync(join(ROOT, 'openapi', 'service.yaml'), 'utf8'),
    ) as { info: { version: string } };
    const installed = JSON.parse(
      readFileSync(
        join(project, 'node_modules', '@plant-store', 'client', 'package.json'),
        'utf8',
      ),
    ) as { version: string };
    expect(installed.version).toBe(contract.info.version);
  });

  it('round-trips ids at both ends of int64 and pages through 250 plants, exactly', async () => {
    const result = await run(
      'round-trip.mjs',
      `import { createPlantStoreClient } from '@plant-store/client';
const client = createPlantStoreClient({ baseUrl: process.env.BASE, token: process.env.TOKEN });
const ends = [-(2n ** 63n), 2n ** 63n - 1n];
const ids = [...ends];
for (let i = 1n; ids.length < 250; i += 1n) ids.push(i * 36028797018963971n);
for (const id of ids) {
  const { data, error } = await client.POST('/plants', { body: { id, name: 'plant ' + id } });
  if (error || data.id !== id) throw new Error('create ' + id + ': ' + (error?.message ?? data.id));
}
const read = [];
for (const id of ends) read.push((await client.GET('/plants/{id}', { params: { path: { id } } })).data.id);
const listed = [];
let after;
for (;;) {
  const { data } = await client.GET('/plants', { params: { query: { limit: 100, ...(after === undefined ? {} : { after }) } } });
  if (data.length === 0) break;
  listed.push(...data.map((plant) => plant.id));
  after = data[data.length - 1].id;
}
const sorted = [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
for (const id of ids) await client.DELETE('/plants/{id}', { params: { path: { id } } });
const left = (await client.GET('/plants')).data.length;
console.log(JSON.stringify({ read: read.map(String), listed: listed.length, exact: listed.every((id, i) => id === sorted[i]), left }));
`,
    );
    expect(result.stderr).toBe('');
    expect(JSON.parse(result.stdout)).toEqual({
      read: ['-9223372036854775808', '9223372036854775807'],
      listed: 250,
      exact: true,
      left: 0,
    });
  });

  it("runs docs/client.md's example as written, type-checked, and it says so when the id is taken", async () => {
    const docs = readFileSync(join(ROOT, 'docs', 'client.md'), 'utf8');
    const example = /^## A typed client[\s\S]*?```ts\n([\s\S]*?)```/m.exec(
      docs,
    )![1];
    expect(example.trimEnd().split('\n').length).toBeLessThanOrEqual(10);
    writeFileSync(join(project, 'try-client.ts'), example);
    // as the reader's editor sees it: the installed package's own declarations
    const checked = await runNodeScript(
      [
        join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
        '--noEmit',
        '--ignoreConfig',
        '--strict',
        '--target',
        'es2022',
        '--module',
        'nodenext',
        '--typeRoots',
        join(ROOT, 'node_modules', '@types'),
        '--types',
        'node',
        'try-client.ts',
      ],
      {},
      project,
    );
    expect(checked.stdout + checked.stderr).toBe('');
    const first = await run('try-client.ts');
    expect(first.stdout).toBe('true\n[ 9223372036854775807n ]\n');
    const again = await run('try-client.ts');
    expect(again.stdout).toBe(
      'a plant with id 9223372036854775807 already exists\n',
    );
  });
});
