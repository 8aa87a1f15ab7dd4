import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { RateLimitModule } from '../rate-limit/rate-limit.module';
import { BearerGuard } from './bearer.guard';
import { IdentityProviderTokens } from './oidc/identity-provider-tokens';
import { RequestAdmission } from './request-admission';
import { RouteAccessCheck } from './route-access.check';
import { TokensModule } from './tokens.module';

/**
 * Who a request is and whether it may come in: RequestAdmission proves tokens (the service's
 * own, and an identity provider's access tokens with IdentityProviderTokens) and applies the
 * rate limits before routing (setup-app.ts), BearerGuard checks each route's access rule (the
 * global guard of app.module.ts), and RouteAccessCheck refuses to boot an app with a route
 * that declares no access.
 */
@Module({
  imports: [TokensModule, RateLimitModule, DiscoveryModule],
  providers: [
    BearerGuard,
    RequestAdmission,
    RouteAccessCheck,
    IdentityProviderTokens,
  ],
  exports: [
    TokensModule,
    BearerGuard,
    RequestAdmission,
    IdentityProviderTokens,
  ],
})
export class AuthModule {}
