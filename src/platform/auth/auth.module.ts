import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { RateLimitModule } from '../rate-limit/rate-limit.module';
import { BearerGuard } from './bearer.guard';
import { IdentityProviderTokensService } from './oidc/identity-provider-tokens.service';
import { RouteAccessCheckService } from './route-access-check.service';
import { TokensModule } from './tokens.module';

/**
 * Who a request is and whether it may come in: BearerGuard proves tokens (the service's own, and
 * an identity provider's access tokens with IdentityProviderTokensService) and applies the rate
 * limits before routing (its `admit`, in setup-app.ts), then checks each route's access rule (the
 * global guard of app.module.ts); RouteAccessCheckService refuses to boot an app with a route that
 * declares no access.
 */
@Module({
  imports: [TokensModule, RateLimitModule, DiscoveryModule],
  providers: [
    BearerGuard,
    RouteAccessCheckService,
    IdentityProviderTokensService,
  ],
  exports: [TokensModule, BearerGuard, IdentityProviderTokensService],
})
export class AuthModule {}
