// @ts-check
// npm run client:pack [-- <folder>]: clients/typescript as a package another repository
// installs (`npm install <the .tgz>`): compiled to CommonJS with its declarations, beside
// clients/typescript/package.json, whose version is the contract's (openapi/service.yaml's
// info.version; a test holds them together). Prints the tarball's path.
const { execFileSync } = require('node:child_process');
const { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join, resolve } = require('node:path');
const ts = require('typescript');

const ROOT = join(__dirname, '..');
const CLIENT = join(ROOT, 'clients', 'typescript');

function pack(destination) {
  const staging = mkdtempSync(join(tmpdir(), 'plant-store-client-'));
  try {
    const dist = join(staging, 'dist');
    const program = ts.createProgram([join(CLIENT, 'index.ts')], {
      // CommonJS, as clients/typescript/package.json says (`"type": "commonjs"`)
      module: ts.ModuleKind.Node16,
      moduleResolution: ts.ModuleResolutionKind.Node16,
      target: ts.ScriptTarget.ES2022,
      lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
      types: [],
      strict: true,
      declaration: true,
      skipLibCheck: true,
      rootDir: CLIENT,
      outDir: dist,
    });
    const emitted = program.emit();
    const problems = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics];
    if (problems.length > 0) {
      throw new Error(ts.formatDiagnostics(problems, ts.createCompilerHost({})));
    }
    // a declaration file is not emitted again: the types come as they are
    copyFileSync(join(CLIENT, 'schema.d.ts'), join(dist, 'schema.d.ts'));
    copyFileSync(join(CLIENT, 'package.json'), join(staging, 'package.json'));
    mkdirSync(destination, { recursive: true });
    const [{ filename }] = JSON.parse(
      execFileSync('npm', ['pack', staging, '--json', '--pack-destination', destination], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
      }),
    );
    return join(destination, filename);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

console.log(pack(resolve(process.argv[2] ?? join(ROOT, 'dist', 'clients'))));
