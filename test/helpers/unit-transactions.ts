import { ClsModule } from 'nestjs-cls';
import {
  ClsPluginTransactional,
  NoOpTransactionalAdapter,
} from '@nestjs-cls/transactional';
import { Test } from '@nestjs/testing';

/**
 * For a unit test of a service with `@Transactional()` or `@LockingTransaction()` methods. They
 * find their TransactionHost through the ClsModule the service's app starts, which a unit test
 * that news the service up never starts: the call throws "TransactionHost not initialized".
 * This starts one whose transactions are no-ops, so that such a method runs its body against
 * the test's mocks. What a real transaction guarantees (all or nothing, the event with its
 * change) is for the e2e specs to test, on both engines. Returns what stops it, for afterAll.
 */
export async function startUnitTestTransactions(): Promise<
  () => Promise<void>
> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      ClsModule.forRoot({
        plugins: [
          new ClsPluginTransactional({
            adapter: new NoOpTransactionalAdapter({
              tx: {},
              disableWarning: true,
            }),
          }),
        ],
      }),
    ],
  }).compile();
  await moduleRef.init();
  return () => moduleRef.close();
}
