import { StartupError } from '../common/errors/startup-error';
import { DeclaredScopes, ScopeCatalogue } from './scopes';

const plants = new DeclaredScopes({
  'plants:read': { description: 'list and read plants', byDefault: true },
  'plants:write': { description: 'add and delete plants', byDefault: false },
});
const orders = new DeclaredScopes({
  'orders:write': { description: 'place orders', byDefault: true },
});

describe('ScopeCatalogue', () => {
  it('lists every declared scope in declaration order, and the defaults among them', () => {
    const catalogue = new ScopeCatalogue([plants, orders]);
    expect(catalogue.all).toEqual([
      'plants:read',
      'plants:write',
      'orders:write',
    ]);
    expect(catalogue.defaults).toEqual(['plants:read', 'orders:write']);
    expect(catalogue.has('orders:write')).toBe(true);
    expect(catalogue.has('orders:read')).toBe(false);
    expect(catalogue.describe()).toBe(
      '`plants:read` (list and read plants), `plants:write` (add and delete plants), `orders:write` (place orders)',
    );
  });

  it('refuses a scope two modules declare', () => {
    const again = new DeclaredScopes({ ...plants.definitions });
    expect(() => new ScopeCatalogue([plants, orders, again])).toThrow(
      new StartupError(
        'scope plants:read is declared by two modules: each scope belongs to one module',
      ),
    );
  });

  it('counts one declaration met twice once', () => {
    expect(new ScopeCatalogue([plants, plants]).all).toEqual([
      'plants:read',
      'plants:write',
    ]);
  });

  it.each(['plants', 'Plants:read', 'plants:', 'plants:read:all', ':read'])(
    'refuses the scope name %j, saying the form it must have',
    (name) => {
      const declaration = new DeclaredScopes({
        [name]: { description: 'x', byDefault: false },
      });
      expect(() => new ScopeCatalogue([declaration])).toThrow(
        `scope "${name}" is not <resource>:<verb>`,
      );
    },
  );
});
