import { Type } from 'class-transformer';
import { IsInt, Max, Min, ValidateNested } from 'class-validator';
import { parseLosslessJson } from '../json/lossless-json';
import { AppValidationPipe } from './app-validation.pipe';
import { Int64Property } from './int64.decorators';
import { integersAsNumbers } from './integers-as-numbers';

class LineDto {
  @Int64Property()
  plantId!: bigint;

  @IsInt({ message: 'quantity must be an integer' })
  @Min(1, { message: 'quantity must be at least 1' })
  quantity!: number;
}

class OrderDto {
  @Int64Property()
  id!: bigint;

  @IsInt({ message: 'priority must be an integer' })
  @Max(10, { message: 'priority must be at most 10' })
  priority!: number;

  @ValidateNested()
  @Type(() => LineDto)
  line!: LineDto;
}

const pipe = new AppValidationPipe();
const body = (text: string) =>
  pipe.transform(parseLosslessJson(text), { type: 'body', metatype: OrderDto });

describe('integers in a request body', () => {
  it('reach a DTO as numbers, except int64 properties, which stay exact bigints', async () => {
    await expect(
      body(
        '{"id": 9223372036854775807, "priority": 2, "line": {"plantId": 9007199254740993, "quantity": 3}}',
      ),
    ).resolves.toEqual(
      Object.assign(new OrderDto(), {
        id: 9223372036854775807n,
        priority: 2,
        line: Object.assign(new LineDto(), {
          plantId: 9007199254740993n,
          quantity: 3,
        }),
      }),
    );
  });

  it('are validated as numbers: @IsInt, @Min and @Max name the field', async () => {
    await expect(
      body('{"id": 1, "priority": 11, "line": {"plantId": 1, "quantity": 0}}'),
    ).rejects.toThrow(
      'priority must be at most 10; quantity must be at least 1',
    );
  });

  it('stay bigints beyond 2^53, which @IsInt refuses rather than round', async () => {
    await expect(
      body(
        '{"id": 1, "priority": 1, "line": {"plantId": 1, "quantity": 9007199254740993}}',
      ),
    ).rejects.toThrow(/^quantity must be /);
  });

  it('becomes a number at the edges of the safe range, not past them', () => {
    const value: Record<string, unknown> = {
      lowest: -9007199254740991n,
      highest: 9007199254740991n,
      below: -9007199254740992n,
      above: 9007199254740992n,
    };
    integersAsNumbers(value, undefined);
    expect(value).toEqual({
      lowest: -9007199254740991,
      highest: 9007199254740991,
      below: -9007199254740992n,
      above: 9007199254740992n,
    });
  });

  it('turns integers in an array into numbers, and leaves objects in an array alone', () => {
    const value: Record<string, unknown> = {
      counts: [1n, 2n, 'x'],
      lines: [{ plantId: 5n }],
    };
    integersAsNumbers(value, undefined);
    expect(value).toEqual({ counts: [1, 2, 'x'], lines: [{ plantId: 5n }] });
  });

  it('leaves anything that is not an object as it is', () => {
    expect(() => integersAsNumbers(null, OrderDto)).not.toThrow();
    expect(() => integersAsNumbers(5n, OrderDto)).not.toThrow();
  });
});
