/** Who may call a module's routes: its scopes, declared in its folder, and the route decorators. */
export { Public } from './decorators/public.decorator';
export { RequireScopes } from './decorators/require-scopes.decorator';
export type { ScopeDefinitions } from './scopes';
export { ScopesModule } from './scopes.module';
