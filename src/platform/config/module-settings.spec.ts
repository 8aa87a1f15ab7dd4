import { ConfigModule, type ConfigType } from '@nestjs/config';
import { Inject, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { z } from 'zod';
import {
  ConfigError,
  parseEnvironment,
  unknownSettingWarnings,
} from './environment';
import { renderEnvExample } from './settings-docs';
import { defineSettings, setting } from './module-settings';

// a module's settings, declared as a module's *.settings.ts declares them
const careSettings = defineSettings('fixture-care', {
  FIXTURE_CARE_INTERVAL: setting.duration({
    default: '1h',
    example: '5m',
    description: 'How often care plans past their due date are looked for',
  }),
  FIXTURE_CARE_REMINDERS: setting.integer(0, 10, {
    default: '3',
    example: '1',
    description: 'Reminders sent before a plan is overdue',
  }),
});

@Injectable()
class CareReader {
  constructor(
    @Inject(careSettings.KEY)
    readonly settings: ConfigType<typeof careSettings>,
  ) {}
}

@Module({
  imports: [ConfigModule.forFeature(careSettings)],
  providers: [CareReader],
})
class CareModule {}

// every kind a module's setting can be written in
const kindSettings = defineSettings('fixture-kinds', {
  FIXTURE_KINDS_ON: setting.boolean({
    default: 'false',
    example: 'true',
    description: 'A switch',
  }),
  FIXTURE_KINDS_LABEL: setting.text({
    example: 'north',
    description: 'A label; unset, none',
  }),
  FIXTURE_KINDS_URL: setting.url({
    example: 'https://receiver.example',
    description: 'Where reports go',
    secret: true,
  }),
  FIXTURE_KINDS_MODE: setting.choice(['fast', 'careful'], {
    default: 'careful',
    example: 'fast',
    description: 'How it works',
  }),
  FIXTURE_KINDS_GRACE: setting.duration({
    zero: true,
    default: '30s',
    example: '0s',
    description: 'How late is still on time; 0s for never',
  }),
  FIXTURE_KINDS_ODD: setting.of(
    {
      schema: z
        .string()
        .regex(/^\d*[13579]$/)
        .transform(Number),
      must: 'an odd number',
    },
    { example: '3', description: 'A kind of the module’s own' },
  ),
});

describe('module settings (defineSettings)', () => {
  it("are checked at boot with the service's own, every mistake at once", () => {
    expect(() =>
      parseEnvironment({
        PORT: 'eighty',
        FIXTURE_CARE_INTERVAL: 'hourly',
        FIXTURE_CARE_REMINDERS: '11',
      }),
    ).toThrow(
      new ConfigError(
        [
          'PORT must be an integer between 0 and 65535, got "eighty"',
          'FIXTURE_CARE_INTERVAL must be a positive duration such as 500ms, 10s, 5m, 24h or 2d, got "hourly"',
          'FIXTURE_CARE_REMINDERS must be an integer between 0 and 10, got "11"',
        ].join('\n'),
      ),
    );
  });

  it('read each kind as the service reads its own', () => {
    const saved = process.env;
    process.env = {
      FIXTURE_KINDS_ON: 'true',
      FIXTURE_KINDS_URL: 'https://receiver.example/reports/',
      FIXTURE_KINDS_MODE: 'fast',
      FIXTURE_KINDS_GRACE: '0s',
      FIXTURE_KINDS_ODD: '7',
    };
    let read: ReturnType<typeof kindSettings>;
    try {
      read = kindSettings();
    } finally {
      process.env = saved;
    }
    expect({
      on: read.FIXTURE_KINDS_ON,
      label: read.FIXTURE_KINDS_LABEL,
      url: read.FIXTURE_KINDS_URL,
      mode: read.FIXTURE_KINDS_MODE,
      grace: read.FIXTURE_KINDS_GRACE,
      odd: read.FIXTURE_KINDS_ODD,
    }).toEqual({
      on: true,
      label: undefined,
      url: 'https://receiver.example/reports',
      mode: 'fast',
      grace: 0,
      odd: 7,
    });
    expect(
      (parseEnvironment({}) as Record<string, unknown>).FIXTURE_KINDS_GRACE,
    ).toBe(30_000);
    expect(() =>
      parseEnvironment({
        FIXTURE_KINDS_ON: 'yes',
        FIXTURE_KINDS_URL: 'ftp://user:hunter2@files.example',
        FIXTURE_KINDS_MODE: 'slow',
        FIXTURE_KINDS_GRACE: '-1s',
        FIXTURE_KINDS_ODD: '4',
        FIXTURE_CARE_INTERVAL: '0s',
      }),
    ).toThrow(
      new ConfigError(
        [
          // zero only where the setting says so
          'FIXTURE_CARE_INTERVAL must be a positive duration such as 500ms, 10s, 5m, 24h or 2d, got "0s"',
          'FIXTURE_KINDS_ON must be true or false, got "yes"',
          // a secret's credentials are hidden
          'FIXTURE_KINDS_URL must be an absolute http or https URL, got "ftp://***@files.example"',
          'FIXTURE_KINDS_MODE must be one of fast, careful, got "slow"',
          'FIXTURE_KINDS_GRACE must be a duration such as 500ms, 10s, 5m, 24h or 2d, got "-1s"',
          'FIXTURE_KINDS_ODD must be an odd number, got "4"',
        ].join('\n'),
      ),
    );
  });

  it('warn of a near miss, naming the setting meant', () => {
    expect(unknownSettingWarnings({ FIXTURE_CARE_INTERVL: '5m' })).toEqual([
      'FIXTURE_CARE_INTERVL is not a setting of the plant store and is ignored; the closest one is FIXTURE_CARE_INTERVAL',
    ]);
  });

  it('come to the providers of their module, read, with their defaults', async () => {
    const saved = process.env;
    process.env = { FIXTURE_CARE_INTERVAL: '5m' };
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [ConfigModule.forRoot({ ignoreEnvFile: true }), CareModule],
      }).compile();
      expect(moduleRef.get(CareReader).settings).toEqual({
        FIXTURE_CARE_INTERVAL: 300_000,
        FIXTURE_CARE_REMINDERS: 3,
      });
    } finally {
      process.env = saved;
    }
  });

  it('are listed in .env.example under their module, with an example of another value', () => {
    expect(renderEnvExample()).toContain(
      [
        '# --- the fixture-care module (src/modules/fixture-care) ---',
        '',
        '# How often care plans past their due date are looked for (for example 5m)',
        '# FIXTURE_CARE_INTERVAL=1h',
        '',
        '# Reminders sent before a plan is overdue (for example 1)',
        '# FIXTURE_CARE_REMINDERS=3',
      ].join('\n'),
    );
  });

  it("refuse a name the service or another module has, when the module's file loads", () => {
    expect(() =>
      defineSettings('fixture-other', {
        PORT: setting.integer(1, 2, {
          example: '2',
          description: 'a port of its own',
        }),
      }),
    ).toThrow(
      "the setting PORT of the module fixture-other is already declared by the service itself: give it a name of its own, starting with the module's (FIXTURE_OTHER_)",
    );
    expect(() =>
      defineSettings('fixture-other', {
        FIXTURE_CARE_INTERVAL: setting.duration({
          example: '1m',
          description: 'the same name',
        }),
      }),
    ).toThrow(
      'the setting FIXTURE_CARE_INTERVAL of the module fixture-other is already declared by fixture-care',
    );
  });
});
