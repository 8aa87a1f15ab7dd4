import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ApiToken } from './api-token.entity';
import { BearerGuard } from './bearer.guard';
import { TokensService } from './tokens.service';

@Module({
  imports: [TypeOrmModule.forFeature([ApiToken])],
  providers: [TokensService, { provide: APP_GUARD, useClass: BearerGuard }],
  exports: [TokensService],
})
export class AuthModule {}
