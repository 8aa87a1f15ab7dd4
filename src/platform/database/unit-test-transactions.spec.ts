import { Transactional } from '@nestjs-cls/transactional';
import { startUnitTestTransactions } from '../../../test/helpers/unit-transactions';
import { LockingTransaction } from './row-locks';

class Service {
  readonly calls: string[] = [];

  @Transactional()
  create(name: string): Promise<string> {
    this.calls.push(`create ${name}`);
    return Promise.resolve(name);
  }

  @LockingTransaction()
  update(name: string): Promise<string> {
    this.calls.push(`update ${name}`);
    return Promise.resolve(name);
  }
}

// docs/conventions.md, "Tests"
describe('transactional methods in a unit test', () => {
  it('throw without a TransactionHost, which a unit test never starts by itself', () => {
    expect(() => new Service().create('basil')).toThrow(
      /TransactionHost not initialized/,
    );
  });

  it('run their body once startUnitTestTransactions has started one', async () => {
    const stop = await startUnitTestTransactions();
    try {
      const service = new Service();
      await expect(service.create('basil')).resolves.toBe('basil');
      await expect(service.update('mint')).resolves.toBe('mint');
      expect(service.calls).toEqual(['create basil', 'update mint']);
    } finally {
      await stop();
    }
  });
});
