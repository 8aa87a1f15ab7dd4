/**
 * `?n` placeholders for a driver that binds `?` by order (better-sqlite3 binds `?n` only from
 * an object): each text is rewritten once to plain `?`, with the order in which it reads the
 * parameters. A statement must be given a value for every number it uses.
 */
export class NumberedPlaceholders {
  /** Statement texts are few and fixed; the cap only keeps a generated one from growing it. */
  private static readonly MAX_PLANS = 1000;
  private readonly plans = new Map<string, Plan>();

  bind(text: string, values: unknown[]): [string, unknown[]] {
    const plan = this.plans.get(text) ?? this.plan(text);
    if (plan.highest > values.length) {
      throw new RangeError(
        `the statement reads parameter ${plan.highest}, but ${values.length} were given: ${text}`,
      );
    }
    return [
      plan.sql,
      plan.inOrder && plan.order.length === values.length
        ? values
        : plan.order.map((position) => values[position - 1]),
    ];
  }

  private plan(text: string): Plan {
    const order: number[] = [];
    const sql = text.replace(/\?(\d+)/g, (_, digits: string) => {
      order.push(Number(digits));
      return '?';
    });
    const plan = {
      sql,
      order,
      highest: Math.max(0, ...order),
      inOrder: order.every((position, index) => position === index + 1),
    };
    if (this.plans.size >= NumberedPlaceholders.MAX_PLANS) this.plans.clear();
    this.plans.set(text, plan);
    return plan;
  }
}

interface Plan {
  sql: string;
  order: number[];
  highest: number;
  inOrder: boolean;
}
