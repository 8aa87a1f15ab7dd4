import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { BearerGuard } from './bearer.guard';
import { RouteAccessCheck } from './route-access.check';
import { TokensModule } from './tokens.module';

/**
 * Bearer authentication and scopes. BearerGuard is installed as a global guard in
 * app.module.ts, after the rate limit; RouteAccessCheck refuses to boot an app with a route
 * that declares no access.
 */
@Module({
  imports: [TokensModule, DiscoveryModule],
  providers: [BearerGuard, RouteAccessCheck],
  exports: [TokensModule, BearerGuard],
})
export class AuthModule {}
