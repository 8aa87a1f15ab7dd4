import { load } from 'js-yaml';
import type { OpenAPIObject } from '@nestjs/swagger';
import { DocumentTexts } from './serve-openapi';

describe('DocumentTexts', () => {
  const document = {
    openapi: '3.1.0',
    info: { title: 'T', version: '1' },
    servers: [{ url: 'http://localhost:3000', description: 'here' }],
    paths: {},
    components: {
      schemas: { Id: { type: 'integer', maximum: 9223372036854775807n } },
    },
  } as unknown as OpenAPIObject;
  const texts = new DocumentTexts(document);

  it.each([
    'https://plants.example.com',
    'http://127.0.0.1:3100',
    // whatever a Host header held, it stays one quoted string
    'http://a"b\\c\'d$&$1: #x',
  ])('writes the document with its server at %s, in JSON and YAML', (url) => {
    const { json, yaml } = texts.at(url);
    const fromJson = JSON.parse(json) as { servers: unknown[] };
    expect(fromJson.servers).toEqual([{ url, description: 'here' }]);
    const fromYaml = load(yaml) as { servers: unknown[] };
    expect(fromYaml.servers).toEqual([{ url, description: 'here' }]);
    // the rest, int64 bounds included, as written once
    expect(json).toContain('"maximum":9223372036854775807');
    expect(yaml).toContain('maximum: 9223372036854775807\n');
  });
});
