import { Global, Module } from '@nestjs/common';
import { ShutdownGate } from './shutdown-gate';

/** The one ShutdownGate: main.ts closes through it, setup-app.ts and readiness consult it. */
@Global()
@Module({ providers: [ShutdownGate], exports: [ShutdownGate] })
export class ShutdownModule {}
