// @ts-check
'use strict';
const { strings } = require('@angular-devkit/core');
const ts = require('typescript');
const { refuse } = require('../resource/index');
const {
  generatedMigrations,
  resourceFilesOf,
  writtenChange,
} = require('./index');

/** What a column's options say of a field this release has stopped reading and writing. */
const UNMAPPED = ['select: false', 'insert: false', 'update: false'];

/**
 * `npm run remove:field -- <field> <module folder> [--drop]`: a field of a generated resource
 * taken out in two releases, as docs/decisions.md, "Two releases on one schema", asks
 * (docs/adding-a-module.md, "Removing a field"):
 *
 * 1. without `--drop`: out of the resource's DTO and create DTO (and so of answers, creates,
 *    PATCH and the contract); the entity keeps its column, neither read nor written
 *    (`select: false, insert: false, update: false`), so that no later migration TypeORM
 *    generates drops it by surprise. A required column is made nullable by a migration of both
 *    engines, so that this release's inserts, which leave it out, go through while the
 *    previous release still reads and writes it.
 * 2. with `--drop`, in the next release: the column itself, by a migration of both engines.
 *
 * @param {Record<string, any>} options
 */
function removeField(options) {
  return async (tree, context) => {
    const settings = settingsOf(options, tree);
    const { files, member, drop } = settings;
    const entitySource = drop
      ? withoutMember(files.entitySource, member)
      : withUnmappedMember(files.entitySource, member, settings);
    const changed = { [files.entityPath]: entitySource };
    if (!drop) {
      for (const [path, className] of [
        [files.dtoPath, `${settings.Singular}Dto`],
        [files.createPath, `Create${settings.Singular}Dto`],
      ]) {
        const source = tree.read(path).toString();
        const property = memberOf(source, path, className, settings.name);
        if (property) changed[path] = withoutMember(source, property);
      }
    }
    // a nullable or defaulted column needs no migration until it is dropped
    const migrations =
      drop || settings.required
        ? await generatedMigrations({
            entityPath: files.entityPath,
            entitySource,
            dropsColumn: drop ? settings.column : undefined,
            migrationName: settings.migrationName,
            timestamp: settings.timestamp,
            postgresUrl: options.postgresUrl,
          })
        : {};
    return writtenChange(tree, context, {
      changed,
      migrations,
      moduleDir: files.moduleDir,
      migrationFile: `${settings.timestamp}-${settings.migrationName}.ts`,
      // the API loses the field in the first step; dropping its column changes no contract
      contract: options.contract !== false && !drop,
      afterWriting: (written) => {
        // a dropped column was out of the API a release already
        if (drop) return;
        const mentions = mentionsOf(written, settings, Object.keys(changed));
        if (mentions.length > 0) {
          context.logger.warn(
            `${settings.name} is still named in ${mentions.join(', ')}: a request that sends it is now refused (400) and an answer has it no more; change them to match`,
          );
        }
      },
    });
  };
}

/** The options, checked, with the field's declaration and the names the edits need. */
function settingsOf(options, tree) {
  const name = String(options.name ?? '');
  const drop = options.drop === true;
  const usage = `npm run remove:field -- ${name} garden-beds${drop ? ' --drop' : ''}`;
  const files = resourceFilesOf(options, tree, {
    usage,
    command: 'remove:field removes from',
  });
  const member = memberOf(
    files.entitySource,
    files.entityPath,
    files.entityClass,
    name,
  );
  if (!member) throw refuse(`${files.entityPath} has no field ${name}`);
  const column = columnDecoratorOf(member);
  if (!column) {
    throw refuse(
      `${files.entityPath}: ${name} is no column (no @Column() or @…Column() decorator)`,
    );
  }
  const callee = column.expression.getText();
  if (/Primary|VersionNumber/.test(callee)) {
    throw refuse(
      `${name} is the ${callee.includes('Primary') ? 'primary key' : 'version (the ETag)'} of ${files.entityClass}, which a resource cannot do without`,
    );
  }
  const columnOptions = column.arguments[0];
  const optionsText =
    columnOptions && ts.isObjectLiteralExpression(columnOptions)
      ? columnOptions.getText()
      : '';
  const unmapped = UNMAPPED.every((option) => optionsText.includes(option));
  const command = `npm run remove:field -- ${name} ${files.moduleDir.split('/').pop()}`;
  if (drop && !unmapped) {
    throw refuse(
      `${name} is still read and written: take it out of the API first (${command}), release that, and drop its column in the release after (docs/decisions.md, "Two releases on one schema")`,
    );
  }
  if (!drop && unmapped) {
    throw refuse(
      `${name} is out of the API already; drop its column in the next release: ${command} --drop`,
    );
  }
  const Singular = strings.classify(files.singular);
  const Field = strings.classify(name);
  const entityName = strings.classify(files.entityClass);
  return {
    name,
    drop,
    files,
    member,
    decorator: column,
    command,
    Singular,
    column: columnNameOf(optionsText, name),
    required:
      !/\bnullable: true\b/.test(optionsText) &&
      !/\bdefault:/.test(optionsText),
    timestamp: options.timestamp ?? Date.now(),
    migrationName: drop
      ? `Drop${Field}From${entityName}`
      : `Release${Field}Of${entityName}`,
  };
}

/** The column's name: the one its options give, or else the field's (TypeORM's default). */
function columnNameOf(optionsText, name) {
  return /\bname: '([^']+)'/.exec(optionsText)?.[1] ?? name;
}

/** The property `name` of the class `className` in the source, if it declares one. */
function memberOf(source, path, className, name) {
  const file = ts.createSourceFile(path, source, ts.ScriptTarget.Latest, true);
  const declaration = file.statements.find(
    (statement) =>
      ts.isClassDeclaration(statement) && statement.name?.text === className,
  );
  if (!declaration || !ts.isClassDeclaration(declaration)) return undefined;
  return declaration.members.find(
    (member) =>
      ts.isPropertyDeclaration(member) && member.name.getText(file) === name,
  );
}

/** The member's `@Column(...)` or `@SomethingColumn(...)` call, if it has one. */
function columnDecoratorOf(member) {
  for (const decorator of ts.getDecorators(member) ?? []) {
    const call = decorator.expression;
    if (
      ts.isCallExpression(call) &&
      /Column$/.test(call.expression.getText())
    ) {
      return call;
    }
  }
  return undefined;
}

/**
 * The entity with the field still a column, but one neither selected, inserted nor updated,
 * made nullable if it was required, and optional in TypeScript.
 */
function withUnmappedMember(source, member, settings) {
  const column = settings.decorator;
  const given = column.arguments[0];
  const added = [
    ...(settings.required ? ['nullable: true'] : []),
    ...UNMAPPED,
  ].join(', ');
  const options =
    given && ts.isObjectLiteralExpression(given)
      ? `${given.getText().slice(0, -1).trimEnd().replace(/,$/, '')}, ${added} }`
      : `{ ${added} }`;
  const decorators = (ts.getDecorators(member) ?? []).map((decorator) =>
    decorator.expression === column
      ? `@${column.expression.getText()}(${options})`
      : decorator.getText(),
  );
  const type = member.type ? `: ${member.type.getText()}` : '';
  const text = [
    `/**`,
    ` * Out of the API: this release neither reads nor writes its column, which the next one`,
    ` * drops (\`${settings.command} --drop\`; docs/adding-a-module.md, "Removing a field").`,
    ` */`,
    ...decorators,
    `${settings.name}?${type};`,
  ].join('\n  ');
  // its own doc comment goes with what it said of the field in the API
  const [doc] = ts.getJSDocCommentsAndTags(member);
  const start = doc ? doc.getStart() : member.getStart();
  return `${source.slice(0, start)}${text}${source.slice(member.end)}`;
}

/**
 * The source without the member (its doc comment and decorators included), and without the
 * named imports only it used.
 */
function withoutMember(source, member) {
  const removed = source.slice(member.getFullStart(), member.end);
  const rest = `${source.slice(0, member.getFullStart())}${source.slice(member.end)}`;
  return withoutUnusedImports(rest, identifiersOf(removed));
}

function identifiersOf(text) {
  return new Set(text.match(/[A-Za-z_$][\w$]*/g) ?? []);
}

/** The source without those of `candidates` it imports by name and no longer uses. */
function withoutUnusedImports(source, candidates) {
  const file = ts.createSourceFile(
    'file.ts',
    source,
    ts.ScriptTarget.Latest,
    true,
  );
  const imports = file.statements.filter(ts.isImportDeclaration);
  const body = source.slice(
    imports.length > 0 ? imports[imports.length - 1].end : 0,
  );
  const used = identifiersOf(body);
  let text = source;
  // from the last import up, so that the earlier ones' positions hold
  for (const declaration of [...imports].reverse()) {
    const bindings = declaration.importClause?.namedBindings;
    if (!bindings || !ts.isNamedImports(bindings)) continue;
    const kept = bindings.elements.filter(
      (element) =>
        !candidates.has(element.name.text) || used.has(element.name.text),
    );
    if (kept.length === bindings.elements.length) continue;
    const replacement =
      kept.length === 0 && !declaration.importClause?.name
        ? ''
        : `${text.slice(declaration.getStart(), bindings.getStart())}{ ${kept
            .map((element) => element.getText())
            .join(', ')} }${text.slice(bindings.end, declaration.end)}`;
    text = `${text.slice(0, replacement ? declaration.getStart() : declaration.getFullStart())}${replacement}${text.slice(declaration.end)}`;
  }
  return text;
}

/**
 * The files of the module, other than those edited and its migrations, and the e2e specs the
 * generator wrote for it (test/<module>*.e2e-spec.ts), that name the field.
 */
function mentionsOf(tree, settings, edited) {
  const word = new RegExp(`\\b${settings.name}\\b`);
  const folder = settings.files.moduleDir;
  const specs = `test/${folder.split('/').pop()}`;
  const found = [];
  const look = (path) => {
    const relative = path.replace(/^\//, '');
    if (!relative.endsWith('.ts') || edited.includes(relative)) return;
    if (relative.includes('/migrations/')) return;
    if (word.test(tree.read(path).toString())) found.push(relative);
  };
  tree.getDir(folder).visit(look);
  tree.getDir('test').visit((path) => {
    const relative = path.replace(/^\//, '');
    if (relative.startsWith(specs) && relative.endsWith('.e2e-spec.ts')) {
      look(path);
    }
  });
  return found.sort();
}

module.exports = { removeField };
