import { Global, Module } from '@nestjs/common';
import { ShutdownGateService } from './shutdown-gate.service';

/** The one ShutdownGateService: main.ts closes through it, setup-app.ts and readiness consult it. */
@Global()
@Module({ providers: [ShutdownGateService], exports: [ShutdownGateService] })
export class ShutdownModule {}
