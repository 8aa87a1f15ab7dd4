import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The Node.js lines package.json's `engines` admits, as `^major.minor.patch` ranges. */
function enginesRange(): string {
  const packageJson = join(__dirname, '..', '..', '..', 'package.json');
  return (
    JSON.parse(readFileSync(packageJson, 'utf8')) as {
      engines: { node: string };
    }
  ).engines.node;
}

/**
 * Why this Node.js cannot run the service, or undefined when it can: `range` is caret ranges
 * joined by `||`, the only form package.json's engines uses (a test holds it to that). An older
 * Node.js loads better-sqlite3's binary and dies of a segmentation fault that names nothing,
 * so the service and its tool ask first (docs/decisions.md, "Node.js versions").
 */
export function unsupportedNode(
  version: string = process.versions.node,
  range: string = enginesRange(),
): string | undefined {
  const [major, minor, patch] = version.split('.').map(Number);
  const admitted = range.split('||').some((alternative) => {
    const caret = /^\s*\^(\d+)\.(\d+)\.(\d+)\s*$/.exec(alternative);
    if (!caret) {
      throw new Error(
        `package.json engines.node must be ^x.y.z ranges joined by ||, got ${JSON.stringify(range)}`,
      );
    }
    const [, wantMajor, wantMinor, wantPatch] = caret.map(Number);
    return (
      major === wantMajor &&
      (minor > wantMinor || (minor === wantMinor && patch >= wantPatch))
    );
  });
  return admitted
    ? undefined
    : `the plant store needs Node.js ${range.replace(/\s+/g, ' ')} (package.json engines), and this is Node.js ${version} (${process.execPath}): put a supported Node.js first on PATH, as the README's Quick start shows`;
}
