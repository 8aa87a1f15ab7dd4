import { ConfigError } from '../../config/environment';
import { readOidcConfig } from './oidc.config';

describe('readOidcConfig', () => {
  it('is off without OIDC_ISSUER, whatever else is set', () => {
    expect(readOidcConfig({ OIDC_AUDIENCE: 'plant-store' })).toBeUndefined();
  });

  it('has the documented defaults', () => {
    expect(
      readOidcConfig({
        OIDC_ISSUER: 'https://idp.example.com/realms/plants/',
        OIDC_AUDIENCE: 'plant-store',
      }),
    ).toEqual({
      issuer: 'https://idp.example.com/realms/plants/',
      audience: 'plant-store',
      jwksUrl: undefined,
      algorithms: ['RS256', 'ES256', 'PS256', 'EdDSA'],
      clockToleranceMs: 30_000,
      scopeClaim: undefined,
      jwksCooldownMs: 5000,
      jwksMaxAgeMs: 600_000,
    });
  });

  it('needs an audience with an issuer', () => {
    expect(() =>
      readOidcConfig({ OIDC_ISSUER: 'https://idp.example.com' }),
    ).toThrow(
      new ConfigError(
        "OIDC_AUDIENCE must be set with OIDC_ISSUER (https://idp.example.com): the audience this service's access tokens name in their aud",
      ),
    );
  });

  it.each(['none', 'HS256', 'RS256,HS512', ''])(
    'refuses the algorithms %j: public-key signatures only',
    (algorithms) => {
      const read = () =>
        readOidcConfig({
          OIDC_ISSUER: 'https://idp.example.com',
          OIDC_AUDIENCE: 'plant-store',
          OIDC_ALGORITHMS: algorithms === '' ? ',' : algorithms,
        });
      expect(read).toThrow(ConfigError);
      expect(read).toThrow(
        /^OIDC_ALGORITHMS must be a comma-separated list of RS256, /,
      );
    },
  );

  it.each([
    'http://idp.example.com',
    'ftp://idp.example.com',
    'idp.example.com',
    'http://127.idp.example.com',
  ])('refuses the issuer %s: https, or http on loopback only', (issuer) => {
    expect(() =>
      readOidcConfig({ OIDC_ISSUER: issuer, OIDC_AUDIENCE: 'plant-store' }),
    ).toThrow(
      new ConfigError(
        `OIDC_ISSUER must be an absolute https URL (http only on loopback), got ${JSON.stringify(issuer)}`,
      ),
    );
  });

  it.each([
    'http://127.0.0.1:8080/realms/x',
    'http://localhost:8080',
    'http://[::1]:9000',
  ])('takes the loopback issuer %s, as written', (issuer) => {
    expect(
      readOidcConfig({ OIDC_ISSUER: issuer, OIDC_AUDIENCE: 'plant-store' })
        ?.issuer,
    ).toBe(issuer);
  });
});
