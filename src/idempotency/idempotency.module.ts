import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { IdempotencySweeper } from './idempotency-sweeper';
import { IdempotencyRunner } from './idempotency.runner';
import { IdempotencyStore } from './idempotency.store';
import { IdempotentRequest } from './idempotent-request.entity';

/**
 * Idempotency-Key for the routes marked `@Idempotent()`, in every module: global, so that a
 * module needs the decorator and nothing else.
 */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature([IdempotentRequest])],
  providers: [IdempotencyStore, IdempotencyRunner, IdempotencySweeper],
  exports: [IdempotencyStore, IdempotencyRunner],
})
export class IdempotencyModule {}
