// @ts-check
'use strict';
const { join, normalize, relative } = require('@angular-devkit/core');
const {
  apply,
  applyTemplates,
  callSource,
  chain,
  filter,
  mergeWith,
  move,
  MergeStrategy,
  noop,
  SchematicsException,
  url,
} = require('@angular-devkit/schematics');
const { RunSchematicTask } = require('@angular-devkit/schematics/tasks');
const { ModuleDeclarator } = require('@nestjs/schematics');
const { lastValueFrom } = require('rxjs');
const { load } = require('js-yaml');
const { formatSources } = require('./format');
const { generateMigrations } = require('./migrations');
const { registerInModule } = require('./module-file');
const { MODULES_ROOT, moduleFolder, toPlatform } = require('./layout');
const { resourceNames } = require('./names');

const APP_MODULE = 'src/app.module.ts';
const CONTRACT_FILES = [
  'src/metadata.ts',
  'openapi/service.yaml',
  'clients/typescript/',
];
// served by the service beside the controllers (src/openapi/openapi-document.ts)
const RESERVED_ROUTES = ['docs', 'openapi.json'];

/** One line, no stack: what the schematics CLI prints before it exits non-zero. */
function refuse(message) {
  return new SchematicsException(message);
}

/**
 * What each command of the collection writes, and where it registers it:
 * - `resource`: a module of its own, imported by AppModule;
 * - `entity`: a second entity with its routes in an existing module, registered in that
 *   module's class;
 * - `action`: a non-CRUD command (`POST /transfers`) in an existing module, its rule in one
 *   `@Transactional()` method, registered likewise.
 */
const KINDS = {
  resource: {
    command: 'resource',
    templates: 'module',
    tests: 'test',
    intoModule: false,
    event: 'added',
  },
  entity: {
    command: 'entity',
    templates: 'module',
    tests: 'test',
    intoModule: true,
    event: 'added',
  },
  action: {
    command: 'action',
    templates: 'action',
    tests: 'action-test',
    intoModule: true,
    event: 'made',
  },
};

/**
 * `nest g resource <name>`: a module of the plant store that follows every convention of
 * docs/adding-a-module.md. Everything is checked, and the migrations generated, before the
 * tree is touched; the contract is regenerated from the written code afterwards
 * (resource-contract, which undoes the write if that fails).
 *
 * @param {Record<string, any>} options
 */
function resource(options) {
  return generate(options, KINDS.resource);
}

/**
 * `nest g entity <name> <module folder>`: a second entity in an existing module, with the
 * same routes, migrations, event and tests as a resource's, registered in the module's own
 * class and guarded by its scopes.
 *
 * @param {Record<string, any>} options
 */
function entity(options) {
  return generate(options, KINDS.entity);
}

/**
 * `nest g action <name> <module folder>`: `POST /<name>` in an existing module, a command
 * whose rule reads, checks and writes in one `@Transactional()` method, with the record it
 * keeps, its migrations, its event and its e2e spec.
 *
 * @param {Record<string, any>} options
 */
function action(options) {
  return generate(options, KINDS.action);
}

function generate(options, kind) {
  return async (tree, context) => {
    const checked = settingsOf(options, kind);
    const registrar = kind.intoModule
      ? moduleFileOf(tree, checked, kind)
      : APP_MODULE;
    const registrarSource = tree.read(registrar)?.toString();
    if (registrarSource === undefined) {
      throw refuse(
        `${APP_MODULE} is missing: run the generator at the project's root`,
      );
    }
    refuseCollisions(tree, checked, kind);
    const settings = {
      ...checked,
      // the module's scopes are declared once, by whichever of its resources came first
      declaresScopes: !scopesDeclared(tree, checked.scope),
    };
    const moduleFiles = renderedFiles(
      settings,
      kind.templates,
      settings.moduleDir,
      kind,
    );
    const testFiles = renderedFiles(settings, kind.tests, 'test', kind);
    const staged = await lastValueFrom(callSource(moduleFiles, context));
    const stagedTests = settings.spec
      ? filesOf(await lastValueFrom(callSource(testFiles, context)))
      : [];
    if (kind.intoModule) {
      for (const path of [...filesOf(staged), ...stagedTests]) {
        if (tree.exists(path)) {
          throw refuse(
            `${path.replace(/^\//, '')} already exists: choose another name`,
          );
        }
      }
    }
    const registered = kind.intoModule
      ? withPartsRegistered(registrarSource, registrar, settings, kind)
      : withModuleImported(registrarSource, settings);
    const migrations = await migrationsOf(staged, settings);
    const created = [
      ...filesOf(staged),
      ...stagedTests,
      ...migrations.map(([path]) => path),
    ].map((path) => path.replace(/^\//, ''));
    return chain([
      mergeWith(moduleFiles, MergeStrategy.Error),
      settings.spec ? mergeWith(testFiles, MergeStrategy.Error) : noop(),
      (written) => {
        for (const [path, source] of migrations) written.create(path, source);
        written.overwrite(registrar, registered);
      },
      formatted([...created, registrar]),
      () => {
        if (!settings.contract) return;
        context.logger.info(
          `and then regenerate ${CONTRACT_FILES.join(', ')} (npm run openapi:generate)`,
        );
        context.addTask(
          new RunSchematicTask('resource-contract', {
            created,
            changed: { [registrar]: registrarSource },
          }),
        );
      },
    ]);
  };
}

const absolute = (path) => normalize(`/${path}`);

/** The options, checked, with every name and path the templates need. */
function settingsOf(options, kind) {
  for (const [option, supported, why] of [
    [
      'type',
      options.type === undefined || options.type === 'rest',
      'only rest',
    ],
    ['crud', options.crud !== false, 'always writes the CRUD operations'],
    [
      'skipImport',
      options.skipImport !== true,
      `must add the module to ${APP_MODULE}, where its routes, scopes and migrations come from`,
    ],
    [
      'language',
      options.language === undefined || options.language === 'ts',
      'writes TypeScript only',
    ],
  ]) {
    if (!supported) {
      throw refuse(
        `--${option === 'skipImport' ? 'skip-import' : option}=${options[option]} is not supported: the plant store's resource schematic ${why}`,
      );
    }
  }
  let names;
  try {
    names = resourceNames(String(options.name ?? ''));
  } catch (error) {
    throw refuse(error.message);
  }
  const sourceRoot = normalize(options.sourceRoot ?? 'src');
  if (sourceRoot !== 'src') {
    throw refuse(`the source root must be src, got ${sourceRoot}`);
  }
  const parent = moduleFolder(String(options.path ?? ''));
  if (parent === undefined) {
    throw refuse(
      `the path must be a folder under ${MODULES_ROOT}, got ${options.path}`,
    );
  }
  if (kind.intoModule && parent === MODULES_ROOT) {
    throw refuse(
      `nest g ${kind.command} adds to an existing module: name its folder under ${MODULES_ROOT} (nest g ${kind.command} ${names.name} inventory), or make a module with nest g resource ${names.name}`,
    );
  }
  const moduleDir =
    options.flat || kind.intoModule ? parent : join(parent, names.name);
  // a resource in a module's folder (`nest g resource greenhouses inventory`) is guarded by
  // that module's scopes, inventory:read and inventory:write, not by scopes of its route's
  const scope = parent === MODULES_ROOT ? names.name : parent.split('/')[2];
  if (!/^[a-z][a-z0-9-]*$/.test(scope)) {
    throw refuse(
      `the module folder ${scope} cannot name scopes (${scope}:read): use a lowercase kebab-case folder under ${MODULES_ROOT}`,
    );
  }
  const specSuffix = options.specFileSuffix ?? 'spec';
  if (specSuffix !== 'spec') {
    throw refuse(
      `--spec-file-suffix=${specSuffix} is not supported: the test runner finds *.spec.ts and *.e2e-spec.ts files only`,
    );
  }
  // an action keeps a record of each time it ran, under an id of the service's making
  const id = kind === KINDS.action ? 'uuid' : (options.id ?? 'int64');
  if (id !== 'int64' && id !== 'uuid') {
    throw refuse(
      `--id must be int64 (chosen by the client) or uuid (made by the service), got ${id}`,
    );
  }
  return {
    ...names,
    id,
    idType: id === 'int64' ? 'bigint' : 'string',
    idParam: id === 'int64' ? 'Int64Param' : 'UuidParam',
    idParamFile: id === 'int64' ? 'int64.decorators' : 'uuid-param.decorator',
    spec: options.spec !== false,
    moduleDir,
    scope,
    scopeWords: scope.replaceAll('-', ' '),
    // the relative imports of the module folder and of its dto folder start with these
    toPlatform: toPlatform(moduleDir),
    toTest: relative(absolute(moduleDir), normalize('/test')),
    dtoToPlatform: toPlatform(join(moduleDir, 'dto')),
    timestamp: options.timestamp ?? Date.now(),
    migrationName: `Add${names.Plural}`,
    event: `${names.singular}.${kind.event}`,
    postgresUrl: options.postgresUrl,
    contract: options.contract !== false,
  };
}

/** Refuses a resource whose module folder, or whose module in the folder given, exists. */
function refuseExistingModule(tree, settings) {
  const taken = (path) =>
    tree.exists(path) ||
    tree.getDir(path).subfiles.length + tree.getDir(path).subdirs.length > 0;
  if (settings.moduleDir.endsWith(`/${settings.name}`)) {
    if (taken(settings.moduleDir)) {
      throw refuse(
        `${settings.moduleDir} already exists: there is a ${settings.name} module already (the generator runs once per resource)`,
      );
    }
    return;
  }
  for (const file of [
    `${settings.name}.module.ts`,
    `${settings.name}.controller.ts`,
  ]) {
    if (taken(join(normalize(settings.moduleDir), file))) {
      throw refuse(
        `${settings.moduleDir}/${file} already exists: the ${settings.name} module is there already`,
      );
    }
  }
}

/** Refuses a name that an existing module, route, table, schema or event already has. */
function refuseCollisions(tree, settings, kind) {
  // entity and action write into a module's folder: their files are checked once rendered
  if (!kind.intoModule) refuseExistingModule(tree, settings);
  const e2e = `test/${settings.name}.e2e-spec.ts`;
  if (tree.exists(e2e)) throw refuse(`${e2e} already exists`);

  const routes = new Set(RESERVED_ROUTES);
  const tables = new Set();
  tree.getDir('src').visit((path) => {
    if (!path.endsWith('.ts')) return;
    const source = tree.read(path).toString();
    for (const [, route] of source.matchAll(
      /@Controller\(\s*['"`]\/?([^'"`/]+)/g,
    )) {
      routes.add(route);
    }
    for (const [, table] of source.matchAll(/@Entity\(\s*['"`]([^'"`]+)/g))
      tables.add(table);
    for (const [, table] of source.matchAll(
      /CREATE TABLE (?:IF NOT EXISTS )?"?(\w+)"?/gi,
    )) {
      tables.add(table);
    }
  });
  if (routes.has(settings.name)) {
    throw refuse(
      `the route /${settings.name} is taken: a controller of the service answers there already`,
    );
  }
  if (tables.has(settings.table)) {
    throw refuse(
      `the table ${settings.table} exists already (an entity or a migration makes it): choose another name`,
    );
  }

  const contract = tree.read('openapi/service.yaml');
  if (contract) {
    const document = /** @type {any} */ (load(contract.toString()));
    const schemas = Object.keys(document?.components?.schemas ?? {});
    for (const schema of [settings.Singular, `New${settings.Singular}`]) {
      if (schemas.includes(schema)) {
        throw refuse(
          `the schema ${schema} is in the OpenAPI document already: choose another name`,
        );
      }
    }
    const { event } = settings;
    if (Object.keys(document?.webhooks ?? {}).includes(event)) {
      throw refuse(
        `the event ${event} is declared already: choose another name`,
      );
    }
  }
}

/** Whether a module declares `<scope>:read` already (in a `*.scopes.ts` file under src). */
function scopesDeclared(tree, scope) {
  let declared = false;
  tree.getDir('src').visit((path) => {
    if (!path.endsWith('.scopes.ts')) return;
    if (tree.read(path).toString().includes(`'${scope}:read'`)) declared = true;
  });
  return declared;
}

/**
 * One folder of templates, rendered, without the unit spec under --no-spec, and without the
 * scopes file when the module's scopes are declared already.
 */
function renderedFiles(settings, folder, destination, kind) {
  return apply(url(`./files/${folder}`), [
    filter((path) => settings.spec || !path.endsWith('.spec.ts.template')),
    // entity and action add to the module file there is
    filter((path) => !kind.intoModule || !path.endsWith('.module.ts.template')),
    filter(
      (path) =>
        settings.declaresScopes || !path.endsWith('.scopes.ts.template'),
    ),
    applyTemplates({ ...settings }),
    move(normalize(destination)),
  ]);
}

/**
 * The entity's migrations, generated by TypeORM from the entity as it is about to be written:
 * `[path, source]` for each engine.
 */
async function migrationsOf(moduleFiles, settings) {
  const folder = normalize(settings.moduleDir);
  const entityPath = join(folder, `${settings.singular}.entity.ts`);
  let migrations;
  try {
    migrations = await generateMigrations({
      root: process.cwd(),
      entityPath,
      entitySource: moduleFiles.read(entityPath).toString(),
      migrationName: settings.migrationName,
      timestamp: settings.timestamp,
      postgresUrl: settings.postgresUrl,
    });
  } catch (error) {
    throw refuse(error.message);
  }
  return Object.entries(migrations).map(([engine, source]) => [
    join(
      folder,
      'migrations',
      engine,
      `${settings.timestamp}-${settings.migrationName}.ts`,
    ),
    source,
  ]);
}

/** AppModule with the new module last among its imports, as `nest g module` adds one. */
function withModuleImported(appModule, settings) {
  return new ModuleDeclarator().declare(appModule, {
    metadata: 'imports',
    type: 'module',
    name: settings.name,
    path: normalize(`/${settings.moduleDir}`),
    module: normalize(`/${APP_MODULE}`),
    symbol: `${settings.Plural}Module`,
  });
}

/**
 * The module file of the folder `entity` and `action` add to: the one `*.module.ts` in it.
 */
function moduleFileOf(tree, settings, kind) {
  const folder = tree.getDir(settings.moduleDir);
  const modules = folder.subfiles.filter((file) => file.endsWith('.module.ts'));
  if (modules.length === 0) {
    // `nest g resource garden-beds catalogue` made src/modules/catalogue/garden-beds/
    const below = folder.subdirs
      .filter((sub) =>
        folder.dir(sub).subfiles.some((file) => file.endsWith('.module.ts')),
      )
      .map(
        (sub) => `${settings.moduleDir.replace(/^src\/modules\//, '')}/${sub}`,
      );
    throw refuse(
      below.length > 0
        ? `${settings.moduleDir} has no module file (*.module.ts), but ${below.join(' and ')} ${below.length === 1 ? 'has one' : 'have one each'}: name the module's own folder, as in nest g ${kind.command} ${settings.name} ${below[0]}`
        : `${settings.moduleDir} has no module file (*.module.ts): nest g entity and nest g action add to an existing module; make one first with nest g resource`,
    );
  }
  if (modules.length > 1) {
    throw refuse(
      `${settings.moduleDir} has ${modules.length} module files (${modules.join(', ')}): name the folder of one of them`,
    );
  }
  return join(normalize(settings.moduleDir), modules[0]);
}

/** The module file with the new parts registered in its `@Module()` (module-file.js). */
function withPartsRegistered(source, path, settings, kind) {
  const { Singular, Plural, CONSTANT, singular, name } = settings;
  const event = `${CONSTANT}_${kind.event.toUpperCase()}`;
  const imports = [
    { symbol: 'TypeOrmModule', from: '@nestjs/typeorm' },
    {
      symbol: 'EventsModule',
      from: `${settings.toPlatform}/events`,
    },
    ...(settings.declaresScopes
      ? [
          {
            symbol: 'ScopesModule',
            from: `${settings.toPlatform}/auth`,
          },
          { symbol: `${CONSTANT}_SCOPES`, from: `./${singular}.scopes` },
        ]
      : []),
    { symbol: Singular, from: `./${singular}.entity` },
    { symbol: event, from: `./${singular}.events` },
    { symbol: `${Plural}Controller`, from: `./${name}.controller` },
    { symbol: `${Plural}Service`, from: `./${name}.service` },
  ];
  try {
    return registerInModule(source, path, {
      imports,
      entities: [Singular],
      events: [event],
      scopes: settings.declaresScopes ? `${CONSTANT}_SCOPES` : undefined,
      controllers: [`${Plural}Controller`],
      providers: [`${Plural}Service`],
    });
  } catch (error) {
    throw refuse(error.message);
  }
}

function filesOf(tree) {
  const files = [];
  tree.visit((path) => files.push(String(path)));
  return files;
}

/** Formats the written and changed TypeScript files with the project's Prettier settings. */
function formatted(paths) {
  return (tree) => {
    const sources = Object.fromEntries(
      paths
        .filter((path) => path.endsWith('.ts'))
        .map((path) => [path, tree.read(path).toString()]),
    );
    for (const [path, source] of Object.entries(
      formatSources(process.cwd(), sources),
    )) {
      tree.overwrite(path, source);
    }
  };
}

/**
 * `nest g uuid-resource <name>`: `resource --id uuid`. The Nest CLI passes `nest g` only the
 * options it knows, and refuses `--id`; a schematic of its own is what it can pass.
 *
 * @param {Record<string, any>} options
 */
function uuidResource(options) {
  return resource({ ...options, id: 'uuid' });
}

module.exports = {
  resource,
  uuidResource,
  entity,
  action,
  moduleFileOf,
  formatted,
  refuse,
};
