import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { BearerGuard } from './bearer.guard';
import { TokensModule } from './tokens.module';

/** Bearer authentication for every route that is not @Public(). */
@Module({
  imports: [TokensModule],
  providers: [{ provide: APP_GUARD, useClass: BearerGuard }],
  exports: [TokensModule],
})
export class AuthModule {}
