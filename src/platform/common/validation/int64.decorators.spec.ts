import { BadRequestException } from '@nestjs/common';
import { DECORATORS } from '@nestjs/swagger';
import { AppValidationPipe } from './app-validation.pipe';
import { Int64Param, Int64Property } from './int64.decorators';

class Body {
  @Int64Property()
  id!: bigint;

  @Int64Property({ optional: true })
  parent?: bigint;
}

class Query {
  @Int64Property({ optional: true, in: 'query' })
  after?: bigint;
}

class Controller {
  find(@Int64Param('id', 'The id') id: bigint) {
    return id;
  }
}

const pipe = new AppValidationPipe();
const read = (metatype: object, type: 'body' | 'query', value: unknown) =>
  pipe.transform(value, { type, metatype: metatype as never });

async function failureOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(BadRequestException);
  return (error as BadRequestException).message;
}

describe('Int64Property', () => {
  it('accepts the whole int64 range as bigints from a JSON body, and an absent optional one', async () => {
    await expect(
      read(Body, 'body', { id: -(2n ** 63n), parent: 2n ** 63n - 1n }),
    ).resolves.toEqual(
      Object.assign(new Body(), { id: -(2n ** 63n), parent: 2n ** 63n - 1n }),
    );
    await expect(read(Body, 'body', { id: 5n })).resolves.toEqual(
      Object.assign(new Body(), { id: 5n }),
    );
  });

  it.each([
    [{ id: '5' }, 'id must be an integer between'],
    [{ id: 2n ** 63n }, 'id must be an integer between'],
    [{ id: 1.5 }, 'id must be an integer between'],
    [{}, 'id is required'],
    [{ id: 1n, parent: null }, 'parent must be an integer between'],
  ])('rejects %p in a body with 400', async (body, message) => {
    expect(await failureOf(read(Body, 'body', body))).toContain(message);
  });

  it('reads decimal text from a query string exactly, and rejects anything else', async () => {
    await expect(
      read(Query, 'query', { after: '9223372036854775807' }),
    ).resolves.toEqual(
      Object.assign(new Query(), { after: 9_223_372_036_854_775_807n }),
    );
    await expect(read(Query, 'query', {})).resolves.toEqual(new Query());
    for (const after of ['9223372036854775808', '5.0', 'x', ['1', '2']]) {
      expect(await failureOf(read(Query, 'query', { after }))).toContain(
        'after must be an integer between',
      );
    }
  });

  it('documents the property as integer/int64, required only when it is', () => {
    const property = (target: object, name: string) =>
      Reflect.getMetadata(
        DECORATORS.API_MODEL_PROPERTIES,
        (target as { prototype: object }).prototype,
        name,
      ) as Record<string, unknown>;
    expect(property(Body, 'id')).toMatchObject({
      type: 'integer',
      format: 'int64',
      required: true,
    });
    expect(property(Body, 'parent')).toMatchObject({
      type: 'integer',
      format: 'int64',
      required: false,
    });
  });
});

describe('Int64Param', () => {
  it('documents a required integer/int64 path parameter, with the exact int64 bounds', () => {
    const parameters = Reflect.getMetadata(
      DECORATORS.API_PARAMETERS,
      Controller.prototype.find,
    ) as Record<string, unknown>[];
    expect(parameters).toEqual([
      expect.objectContaining({
        name: 'id',
        in: 'path',
        required: true,
        description: 'The id',
        schema: {
          type: 'integer',
          format: 'int64',
          minimum: -(2n ** 63n),
          maximum: 2n ** 63n - 1n,
        },
      }),
    ]);
  });
});
