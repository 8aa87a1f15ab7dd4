import { unsupportedNode } from './supported-node';

// Imported first by the service's and the tool's entry points, before anything loads
// better-sqlite3's binary, which an unsupported Node.js dies of without a word.
const problem = unsupportedNode();
if (problem !== undefined) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
