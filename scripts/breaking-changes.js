// The changes from one OpenAPI document to another that break a client of the first:
// `redocly diff`'s major ones, less the growth a document declares. A list of event types
// (`x-enum-may-grow: true`, src/openapi/openapi-document.ts) gains a type, and its
// `maxItems` one more, with each module that publishes an event: subscribers are told so.
const { execFileSync } = require('node:child_process');
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const { load } = require('js-yaml');

const REDOCLY = join(__dirname, '..', 'node_modules', '.bin', 'redocly');
const GROWTH = new Set(['enum', 'maxItems']);

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options']);

function segments(pointer) {
  return pointer
    .replace(/^#\//, '')
    .split('/')
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** The node a JSON pointer (`#/components/schemas/X/properties/y`) names, if any. */
function nodeAt(document, pointer) {
  return segments(pointer).reduce(
    (node, key) => (node === undefined ? undefined : node[key]),
    document,
  );
}

/** `POST /plants`, `webhook order.placed`, or the pointer itself. */
function operationOf(pointer) {
  const [section, name, method] = segments(pointer);
  if (section !== 'paths' && section !== 'webhooks') return pointer;
  const prefix = section === 'webhooks' ? 'webhook ' : '';
  return METHODS.has(method) ? `${prefix}${method.toUpperCase()} ${name}` : `${prefix}${name}`;
}

/** A list that may grow kept every value and bound it had: types were added, none taken away. */
function isDeclaredGrowth(revision, change) {
  if (change.kind !== 'modified' || !GROWTH.has(change.property)) return false;
  const schema = nodeAt(revision, change.revision.pointer.replace(/\/[^/]+$/, ''));
  if (schema?.['x-enum-may-grow'] !== true) return false;
  const [before, after] = [change.base?.value, change.revision?.value];
  return change.property === 'enum'
    ? Array.isArray(before) && Array.isArray(after) && before.every((value) => after.includes(value))
    : typeof before === 'number' && typeof after === 'number' && after >= before;
}

/** `where: what`, one line for each change of `revisionFile` that breaks `baseFile`'s clients. */
function breakingChanges(baseFile, revisionFile) {
  const report = JSON.parse(
    execFileSync(
      REDOCLY,
      ['diff', baseFile, revisionFile, '--format', 'json', '--fail-on', 'none'],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
    ),
  );
  const revision = load(readFileSync(revisionFile, 'utf8'));
  return report.changes
    .filter((change) => change.impact === 'major')
    .filter((change) => !isDeclaredGrowth(revision, change))
    .map((change) => {
      const what = change.verdicts.map(({ message }) => message).join(' ');
      return `${operationOf(change.path)}: ${what || `${change.kind} ${change.path}`}`;
    });
}

module.exports = { breakingChanges };
