import { Global, Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { TypeOrmModule } from '@nestjs/typeorm';
import { IdempotencySweeper } from './idempotency-sweeper';
import { IdempotencyRunner } from './idempotency.runner';
import { IdempotencyStore } from './idempotency.store';
import { IdempotentRequest } from './idempotent-request.entity';
import { idempotencySettings } from './idempotency.settings';

/**
 * Idempotency-Key for the routes marked `@Idempotent()`, in every module: global, so that a
 * module needs the decorator and nothing else.
 */
@Global()
@Module({
  imports: [
    TypeOrmModule.forFeature([IdempotentRequest]),
    ConfigModule.forFeature(idempotencySettings),
  ],
  providers: [IdempotencyStore, IdempotencyRunner, IdempotencySweeper],
  exports: [IdempotencyStore, IdempotencyRunner],
})
export class IdempotencyModule {}
