import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ApiToken } from './api-token.entity';
import { ScopeCatalogue } from './scopes';
import { scopeCatalogueProvider } from './scopes.module';
import { TokensService } from './tokens.service';

/** API tokens and the scopes they may hold, for the command-line tool as well as the guard. */
@Module({
  imports: [TypeOrmModule.forFeature([ApiToken]), DiscoveryModule],
  providers: [TokensService, scopeCatalogueProvider],
  exports: [TokensService, ScopeCatalogue],
})
export class TokensModule {}
