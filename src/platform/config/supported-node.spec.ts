import { unsupportedNode } from './supported-node';

describe('unsupportedNode', () => {
  const range = '^22.22.3 || ^24.15.0 || ^26.0.0';

  it.each(['22.22.3', '22.23.5', '24.15.0', '24.22.3', '26.0.0', '26.3.1'])(
    'admits %s',
    (version) => {
      expect(unsupportedNode(version, range)).toBeUndefined();
    },
  );

  it.each([
    '20.20.2',
    '22.22.2',
    '22.15.0',
    '23.5.0',
    '24.14.9',
    '25.0.0',
    '27.0.0',
  ])('refuses %s, naming it and the lines that run the service', (version) => {
    expect(unsupportedNode(version, range)).toBe(
      `the plant store needs Node.js ^22.22.3 || ^24.15.0 || ^26.0.0 (package.json engines), and this is Node.js ${version} (${process.execPath}): put a supported Node.js first on PATH, as the README's Quick start shows`,
    );
  });

  it('reads the ranges package.json admits, and admits the Node.js that runs the tests', () => {
    expect(unsupportedNode()).toBeUndefined();
  });

  it('refuses to guess at a range of another form', () => {
    expect(() => unsupportedNode('24.0.0', '>=22')).toThrow(
      'package.json engines.node must be ^x.y.z ranges joined by ||, got ">=22"',
    );
  });
});
