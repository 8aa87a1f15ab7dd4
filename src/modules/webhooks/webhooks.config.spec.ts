import {
  metaOf,
  moduleSettingNames,
  parseEnvironment,
  unknownSettingWarnings,
} from '../../platform/config';
import { readWebhooksConfig, webhooksConfig } from './webhooks.config';

describe('readWebhooksConfig', () => {
  it('has the documented defaults', () => {
    expect(readWebhooksConfig({})).toEqual({
      allowPrivateNetworks: false,
      timeoutMs: 10_000,
      slowMs: 5_000,
      retryBaseMs: 5_000,
      retryMaxDelayMs: 3_600_000,
      retryWindowMs: 86_400_000,
      pollIntervalMs: 500,
      maxInFlight: 64,
      maxInFlightPerSubscription: 32,
      lagWarnMs: 60_000,
      failuresBeforePause: 5,
      pauseMs: 60_000,
      retentionMs: 7 * 86_400_000,
      failedRetentionMs: 30 * 86_400_000,
      retentionIntervalMs: 600_000,
    });
  });

  it('is registered as the webhooks configuration', () => {
    expect(webhooksConfig.KEY).toBe('CONFIGURATION(webhooks)');
  });

  it('declares its settings with the rest: checked at boot, known to the warnings', () => {
    expect(metaOf('WEBHOOKS_TIMEOUT').fallback).toBe('10s');
    expect(() => parseEnvironment({ WEBHOOKS_TIMEOUT: '10' })).toThrow(
      'WEBHOOKS_TIMEOUT must be a positive duration such as 500ms, 10s, 5m, 24h or 2d, got "10"',
    );
    expect(
      unknownSettingWarnings({
        WEBHOOKS_TIMEOUT: '5s',
        RETENTION_INTERVAL: '1h',
      }),
    ).toEqual([]);
    expect(unknownSettingWarnings({ WEBHOOKS_TIMEOUTS_MS: '1' })).toEqual([
      'WEBHOOKS_TIMEOUTS_MS is not a setting of the plant store and is ignored; the closest one is WEBHOOKS_TIMEOUT',
    ]);
  });

  it('gives each setting a meaning, and an example that is another valid value', () => {
    const names = moduleSettingNames().find(
      ([module]) => module === 'webhooks',
    )![1];
    expect(names).toHaveLength(15);
    const examples: Record<string, string> = {};
    for (const name of names) {
      const { description, example, fallback } = metaOf(name);
      expect(description).toMatch(/^[A-Z].{20,}[^.]$/);
      expect(example).toMatch(/^\w+$/);
      expect(example).not.toBe(fallback);
      examples[name] = example!;
    }
    expect(readWebhooksConfig(examples)).toMatchObject({
      allowPrivateNetworks: true,
      timeoutMs: 5000,
      slowMs: 2000,
      maxInFlightPerSubscription: 8,
    });
  });

  it('holds the counts within their bounds', () => {
    for (const [name, max] of [
      ['WEBHOOKS_MAX_IN_FLIGHT', 10_000],
      ['WEBHOOKS_MAX_IN_FLIGHT_PER_SUBSCRIPTION', 10_000],
      ['WEBHOOKS_FAILURES_BEFORE_PAUSE', 1000],
    ] as const) {
      expect(() => parseEnvironment({ [name]: '0' })).toThrow(
        `${name} must be an integer between 1 and ${max}, got "0"`,
      );
      expect(() => parseEnvironment({ [name]: String(max + 1) })).toThrow(
        `${name} must be an integer between 1 and ${max}`,
      );
      expect(parseEnvironment({ [name]: String(max) })).toMatchObject({
        [name]: max,
      });
    }
  });

  it('booleans: "true" and "false" only', () => {
    expect(
      readWebhooksConfig({ WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true' })
        .allowPrivateNetworks,
    ).toBe(true);
    expect(() =>
      readWebhooksConfig({ WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'yes' }),
    ).toThrow(
      'WEBHOOKS_ALLOW_PRIVATE_NETWORKS must be true or false, got "yes"',
    );
  });

  it('takes a receiver as slow at half the timeout by default, and refuses a slowness past it', () => {
    expect(readWebhooksConfig({ WEBHOOKS_TIMEOUT: '4s' }).slowMs).toBe(2000);
    expect(() =>
      readWebhooksConfig({ WEBHOOKS_TIMEOUT: '4s', WEBHOOKS_SLOW: '4s' }),
    ).toThrow(
      'WEBHOOKS_SLOW must be shorter than WEBHOOKS_TIMEOUT (4000 ms), got 4000 ms',
    );
  });

  it('reads the per-subscription share of webhook slots, half by default and never more than all', () => {
    expect(
      readWebhooksConfig({ WEBHOOKS_MAX_IN_FLIGHT: '10' })
        .maxInFlightPerSubscription,
    ).toBe(5);
    expect(
      readWebhooksConfig({ WEBHOOKS_MAX_IN_FLIGHT: '3' })
        .maxInFlightPerSubscription,
    ).toBe(1);
    expect(readWebhooksConfig({}).maxInFlightPerSubscription).toBe(32);
    expect(
      readWebhooksConfig({
        WEBHOOKS_MAX_IN_FLIGHT: '8',
        WEBHOOKS_MAX_IN_FLIGHT_PER_SUBSCRIPTION: '8',
      }).maxInFlightPerSubscription,
    ).toBe(8);
    expect(() =>
      readWebhooksConfig({
        WEBHOOKS_MAX_IN_FLIGHT: '8',
        WEBHOOKS_MAX_IN_FLIGHT_PER_SUBSCRIPTION: '9',
      }),
    ).toThrow(
      'WEBHOOKS_MAX_IN_FLIGHT_PER_SUBSCRIPTION must be at most WEBHOOKS_MAX_IN_FLIGHT (8), got 9',
    );
  });
});
