// @ts-check
'use strict';
const ts = require('typescript');

/**
 * @typedef {object} Registration what a module file gains
 * @property {{ symbol: string, from: string }[]} imports the import declarations it needs
 * @property {string[]} [entities] added to `TypeOrmModule.forFeature([...])`
 * @property {string[]} [events] added to `EventsModule.forFeature([...])`
 * @property {string} [scopes] registered as `ScopesModule.forFeature(...)`
 * @property {string[]} [controllers]
 * @property {string[]} [providers]
 */

/**
 * The source of a module file with another entity, event, controller and service registered in
 * its `@Module()`, as a developer would add them by hand: into the arrays already there, or in
 * arrays of their own where there are none. Layout is left to Prettier.
 *
 * @param {string} source
 * @param {string} path for the error messages
 * @param {Registration} registration
 * @returns {string}
 */
function registerInModule(source, path, registration) {
  const file = ts.createSourceFile(path, source, ts.ScriptTarget.Latest, true);
  const metadata = moduleMetadataOf(file, path);
  /** @type {[number, string][]} */
  const edits = [];
  /** @type {string[]} */
  const newProperties = [];
  const { imports: needed = [] } = registration;

  const property = (name) =>
    metadata.properties.find(
      (candidate) =>
        ts.isPropertyAssignment(candidate) &&
        candidate.name.getText(file) === name,
    );
  const arrayOf = (name) => {
    const found = property(name);
    if (!found) return undefined;
    if (
      !ts.isPropertyAssignment(found) ||
      !ts.isArrayLiteralExpression(found.initializer)
    ) {
      throw new Error(
        `${path}: the ${name} of its @Module() is not an array written there, so the generator cannot add to it; add the new parts by hand`,
      );
    }
    return found.initializer;
  };
  const append = (array, items) =>
    edits.push([
      array.end - 1,
      (array.elements.length > 0 && !array.elements.hasTrailingComma
        ? ', '
        : '') + items.join(', '),
    ]);
  const addTo = (name, items) => {
    if (!items?.length) return;
    const array = arrayOf(name);
    if (array) append(array, items);
    else newProperties.push(`${name}: [${items.join(', ')}]`);
  };

  // TypeOrmModule.forFeature([...]) and EventsModule.forFeature([...]) within `imports`
  const imports = arrayOf('imports');
  /** @type {string[]} */
  const newImports = [];
  const forFeature = (moduleName, items) => {
    if (!items?.length) return;
    const call = imports?.elements.find(
      (element) =>
        ts.isCallExpression(element) &&
        element.expression.getText(file) === `${moduleName}.forFeature`,
    );
    if (!call) {
      newImports.push(`${moduleName}.forFeature([${items.join(', ')}])`);
      return;
    }
    const [list] = /** @type {ts.CallExpression} */ (call).arguments;
    if (!list || !ts.isArrayLiteralExpression(list)) {
      throw new Error(
        `${path}: ${moduleName}.forFeature is not given an array written there, so the generator cannot add to it; add ${items.join(', ')} by hand`,
      );
    }
    append(list, items);
  };
  forFeature('TypeOrmModule', registration.entities);
  if (registration.scopes) {
    newImports.push(`ScopesModule.forFeature(${registration.scopes})`);
  }
  forFeature('EventsModule', registration.events);
  addTo('imports', newImports);
  addTo('controllers', registration.controllers);
  addTo('providers', registration.providers);

  if (newProperties.length > 0) {
    const { properties } = metadata;
    edits.push([
      metadata.end - 1,
      (properties.length > 0 && !properties.hasTrailingComma ? ', ' : '') +
        newProperties.join(', '),
    ]);
  }

  // the import declarations it lacks, after the last one
  const declared = new Set();
  let lastImportEnd = 0;
  for (const statement of file.statements) {
    if (!ts.isImportDeclaration(statement)) continue;
    lastImportEnd = statement.end;
    const bindings = statement.importClause?.namedBindings;
    if (bindings && ts.isNamedImports(bindings)) {
      for (const element of bindings.elements) declared.add(element.name.text);
    }
  }
  const lines = needed
    .filter(({ symbol }) => !declared.has(symbol))
    .map(({ symbol, from }) => `\nimport { ${symbol} } from '${from}';`);
  if (lines.length > 0) edits.push([lastImportEnd, lines.join('')]);

  let result = source;
  for (const [position, text] of edits.sort(([a], [b]) => b - a)) {
    result = result.slice(0, position) + text + result.slice(position);
  }
  return result;
}

/** The object given to the one `@Module()` of the file. */
function moduleMetadataOf(file, path) {
  /** @type {ts.ObjectLiteralExpression[]} */
  const found = [];
  const visit = (node) => {
    if (
      ts.isDecorator(node) &&
      ts.isCallExpression(node.expression) &&
      node.expression.expression.getText(file) === 'Module'
    ) {
      const [metadata] = node.expression.arguments;
      if (metadata && ts.isObjectLiteralExpression(metadata))
        found.push(metadata);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  if (found.length !== 1) {
    throw new Error(
      `${path} has ${found.length === 0 ? 'no' : found.length} @Module({ ... }) class${found.length > 1 ? 'es' : ''}: the generator adds to a module file with exactly one`,
    );
  }
  return found[0];
}

module.exports = { registerInModule };
