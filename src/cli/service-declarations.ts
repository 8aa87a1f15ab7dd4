import {
  Module,
  type DynamicModule,
  type ForwardReference,
  type Provider,
  type Type,
} from '@nestjs/common';
import { MODULE_METADATA } from '@nestjs/common/constants';
import { DeclaredScopes, ScopeCatalogue } from '../platform/auth/scopes';
import {
  DeclaredEvents,
  EventCatalogue,
} from '../platform/events/event-catalogue';

type Imported =
  | Type
  | DynamicModule
  | Promise<DynamicModule>
  | ForwardReference
  | undefined;

type Declaration = DeclaredScopes | DeclaredEvents;

function isDeclaration(value: unknown): value is Declaration {
  return value instanceof DeclaredScopes || value instanceof DeclaredEvents;
}

/**
 * The scopes and events the service's modules declare, read from their metadata without
 * starting anything: the CLI shows them in its help, which needs no database, and hands them
 * to its own, smaller application context.
 */
export class ServiceDeclarations {
  readonly scopes: ScopeCatalogue;
  readonly events: EventCatalogue;
  private readonly declarations: Declaration[] = [];

  constructor(root: Type) {
    this.visit(root, new Set());
    this.scopes = new ScopeCatalogue(
      this.declarations.filter((value) => value instanceof DeclaredScopes),
    );
    this.events = new EventCatalogue(
      this.declarations.filter((value) => value instanceof DeclaredEvents),
    );
  }

  /** The declarations as providers, for the catalogues of another application context. */
  asModule(): DynamicModule {
    return {
      module: ServiceDeclarationsModule,
      providers: this.declarations.map(
        (value, index): Provider => ({
          provide: `declaration ${index}`,
          useValue: value,
        }),
      ),
    };
  }

  private visit(imported: Imported, seen: Set<unknown>): void {
    if (imported === undefined || imported instanceof Promise) return;
    if ('forwardRef' in imported) {
      this.visit((imported.forwardRef as () => Imported)(), seen);
      return;
    }
    if (seen.has(imported)) return;
    seen.add(imported);
    const isDynamic = 'module' in imported;
    const type: Type = isDynamic ? imported.module : imported;
    const providers: Provider[] = [
      ...((Reflect.getMetadata(MODULE_METADATA.PROVIDERS, type) as
        | Provider[]
        | undefined) ?? []),
      ...((isDynamic && imported.providers) || []),
    ];
    for (const provider of providers) {
      if (
        typeof provider === 'object' &&
        'useValue' in provider &&
        isDeclaration(provider.useValue) &&
        !this.declarations.includes(provider.useValue)
      ) {
        this.declarations.push(provider.useValue);
      }
    }
    const imports: Imported[] = [
      ...((Reflect.getMetadata(MODULE_METADATA.IMPORTS, type) as
        | Imported[]
        | undefined) ?? []),
      ...((isDynamic && (imported.imports as Imported[])) || []),
    ];
    for (const child of imports) this.visit(child, seen);
  }
}

@Module({})
class ServiceDeclarationsModule {}
