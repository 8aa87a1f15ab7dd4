import { createOrdersTables } from './fixtures/orders/create-tables';
import { OrdersFixtureModule } from './fixtures/orders/orders.module';
import { OrdersService } from './fixtures/orders/orders.service';
import { StockItem } from './fixtures/orders/stock-item.entity';
import { DataSource } from 'typeorm';
import { startTestApp } from './helpers/test-app';

// @nestjs-cls/transactional keeps one TransactionHost per process: with two apps open, the
// first app's @Transactional() methods open their transactions on the second app's database.
// Its statements then refuse to run outside them, saying so (docs/conventions.md, "Tests").
describe(`two Nest apps in one process (${process.env.TEST_ENGINE ?? 'sqlite'})`, () => {
  it("refuses the first app's transactional rule once a second app is open, naming the fix", async () => {
    const first = await startTestApp({ imports: [OrdersFixtureModule] });
    const orders = first.app.get(OrdersService);
    const dataSource = first.app.get(DataSource);
    await createOrdersTables(dataSource);
    await dataSource
      .getRepository(StockItem)
      .insert({ plantId: 1n, quantity: 5 });
    try {
      // alone, it works
      await orders.placeSerializable(1n, 1);
      const second = await startTestApp();
      try {
        await expect(orders.placeSerializable(1n, 1)).rejects.toThrow(
          'a statement ran inside a transaction that another Nest app of this process opened: @nestjs-cls/transactional keeps one TransactionHost per process',
        );
        expect(await orders.inStock(1n)).toBe(4);
      } finally {
        await second.close();
      }
    } finally {
      await first.close();
    }
  });
});
