import {
  Module,
  type DynamicModule,
  type FactoryProvider,
} from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { declarationsOf } from '../common/modules/declarations';
import {
  DeclaredScopes,
  ScopeCatalogue,
  type ScopeDefinitions,
} from './scopes';

/**
 * Scopes live with the module that checks them: its module file imports
 * `ScopesModule.forFeature({...})`, and the catalogue finds every declaration at boot.
 */
@Module({})
export class ScopesModule {
  static forFeature(definitions: ScopeDefinitions): DynamicModule {
    return {
      module: ScopesModule,
      providers: [
        {
          provide: `scopes ${Object.keys(definitions).join(' ')}`,
          useValue: new DeclaredScopes(definitions),
        },
      ],
    };
  }
}

/** The catalogue of every module's scopes, for the module that provides it. */
export const scopeCatalogueProvider: FactoryProvider<ScopeCatalogue> = {
  provide: ScopeCatalogue,
  inject: [DiscoveryService],
  useFactory: (discovery: DiscoveryService) =>
    new ScopeCatalogue(declarationsOf(discovery, DeclaredScopes)),
};
