import { breakingChanges, type OpenApiDocument } from './breaking-changes';

/** A small document: one operation taking a body and a query parameter, one webhook. */
function document(): OpenApiDocument {
  return {
    paths: {
      '/orders': {
        post: {
          parameters: [
            { name: 'dryRun', in: 'query', schema: { type: 'boolean' } },
          ],
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: { $ref: '#/components/schemas/NewOrder' },
              },
            },
          },
          responses: {
            '201': {
              content: {
                'application/json': {
                  schema: { $ref: '#/components/schemas/Order' },
                },
              },
            },
            '400': {},
          },
        },
      },
    },
    webhooks: {
      'order.placed': {
        post: {
          requestBody: {
            content: {
              'application/json': {
                schema: { $ref: '#/components/schemas/Order' },
              },
            },
          },
        },
      },
    },
    components: {
      schemas: {
        NewOrder: {
          type: 'object',
          properties: {
            quantity: { type: 'integer', minimum: 1, maximum: 1000 },
            note: { type: 'string', maxLength: 200 },
            colour: { type: 'string', enum: ['green', 'red'] },
          },
          required: ['quantity'],
        },
        Order: {
          type: 'object',
          properties: {
            id: { type: 'string', format: 'uuid' },
            status: { type: 'string', enum: ['placed', 'shipped'] },
            tags: { type: 'array', items: { type: 'string' } },
          },
          required: ['id', 'status'],
        },
      },
    },
  };
}

function changed(edit: (doc: ReturnType<typeof document>) => void): string[] {
  const after = document();
  edit(after);
  return breakingChanges(document(), after);
}

const schemas = (doc: OpenApiDocument) => doc.components!.schemas!;

describe('breakingChanges', () => {
  it('finds nothing in the same document', () => {
    expect(changed(() => {})).toEqual([]);
  });

  it('accepts what a client cannot notice: a new operation, an optional field, a looser bound, a new enum value in a request, a narrower answer', () => {
    expect(
      changed((doc) => {
        doc.paths!['/orders'].get = { responses: { '200': {} } };
        schemas(doc).NewOrder.properties!.gift = { type: 'boolean' };
        schemas(doc).NewOrder.properties!.quantity.maximum = 5000;
        delete schemas(doc).NewOrder.properties!.note.maxLength;
        schemas(doc).NewOrder.properties!.colour.enum = [
          'green',
          'red',
          'blue',
        ];
        schemas(doc).Order.properties!.status.enum = ['placed'];
        schemas(doc).Order.properties!.total = { type: 'integer' };
        schemas(doc).Order.required!.push('total');
      }),
    ).toEqual([]);
  });

  it.each<[string, (doc: ReturnType<typeof document>) => void, string]>([
    [
      'a removed operation',
      (doc) => delete doc.paths!['/orders'].post,
      'POST /orders: removed',
    ],
    [
      'a removed webhook',
      (doc) => delete doc.webhooks!['order.placed'],
      'webhook POST order.placed: removed',
    ],
    [
      'a removed answer',
      (doc) => delete doc.paths!['/orders'].post.responses!['400'],
      'POST /orders: answer 400 removed',
    ],
    [
      'a new required parameter',
      (doc) =>
        doc.paths!['/orders'].post.parameters!.push({
          name: 'shop',
          in: 'query',
          required: true,
        }),
      'POST /orders: query shop is now required',
    ],
    [
      'a removed parameter',
      (doc) => (doc.paths!['/orders'].post.parameters = []),
      'POST /orders: query dryRun: removed',
    ],
    [
      "a parameter's type",
      (doc) =>
        (doc.paths!['/orders'].post.parameters![0].schema!.type = 'string'),
      'POST /orders: query dryRun: type "boolean" → "string"',
    ],
    [
      'a new required field',
      (doc) => schemas(doc).NewOrder.required!.push('note'),
      'POST /orders: body.note: now required',
    ],
    [
      'a lower maximum',
      (doc) => (schemas(doc).NewOrder.properties!.quantity.maximum = 100),
      'POST /orders: body.quantity: maximum 1000 → 100',
    ],
    [
      'a higher minimum',
      (doc) => (schemas(doc).NewOrder.properties!.quantity.minimum = 2),
      'POST /orders: body.quantity: minimum 1 → 2',
    ],
    [
      'a new bound',
      (doc) => (schemas(doc).NewOrder.properties!.note.minLength = 1),
      'POST /orders: body.note: minLength none → 1',
    ],
    [
      'a new pattern',
      (doc) => (schemas(doc).NewOrder.properties!.note.pattern = '^[a-z]*$'),
      'POST /orders: body.note: pattern none → ^[a-z]*$',
    ],
    [
      'a request enum value removed',
      (doc) => (schemas(doc).NewOrder.properties!.colour.enum = ['green']),
      'POST /orders: body.colour: no longer accepts "red"',
    ],
    [
      'a new enum on a request field',
      (doc) => (schemas(doc).NewOrder.properties!.note.enum = ['hi']),
      'POST /orders: body.note: now only "hi"',
    ],
    [
      'a removed request field',
      (doc) => delete schemas(doc).NewOrder.properties!.note,
      'POST /orders: body.note: removed',
    ],
    [
      'an answer field removed',
      (doc) => delete schemas(doc).Order.properties!.tags,
      'POST /orders: answer 201.tags: removed',
    ],
    [
      'an answer field no longer required',
      (doc) => (schemas(doc).Order.required = ['id']),
      'POST /orders: answer 201.status: no longer always present',
    ],
    [
      'an answer enum value added',
      (doc) =>
        (schemas(doc).Order.properties!.status.enum = [
          'placed',
          'shipped',
          'lost',
        ]),
      'POST /orders: answer 201.status: may now be "lost"',
    ],
    [
      "an answer field's format",
      (doc) => (schemas(doc).Order.properties!.id.format = 'uri'),
      'POST /orders: answer 201.id: format "uuid" → "uri"',
    ],
    [
      "an array's items",
      (doc) => (schemas(doc).Order.properties!.tags.items!.type = 'integer'),
      'POST /orders: answer 201.tags[]: type "string" → "integer"',
    ],
    [
      'a webhook body field removed, held to the rules of answers',
      (doc) => {
        doc.webhooks!['order.placed'].post.requestBody!.content![
          'application/json'
        ].schema = { type: 'object', properties: {} };
      },
      'webhook POST order.placed: body.id: removed',
    ],
  ])('reports %s', (_label, edit, expected) => {
    expect(changed(edit)).toContain(expected);
  });

  it('reports a body that becomes required', () => {
    const before = document();
    before.paths!['/orders'].post.requestBody!.required = false;
    expect(breakingChanges(before, document())).toEqual([
      'POST /orders: a body is now required',
    ]);
  });
});
