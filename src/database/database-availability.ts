import { Injectable } from '@nestjs/common';
import { DependencyState } from '../logging/dependency-state';

/**
 * The database's availability as requests, readiness and the webhook dispatcher meet it:
 * an outage is logged once when it begins and once when it ends.
 */
@Injectable()
export class DatabaseAvailability extends DependencyState {
  constructor() {
    super(
      'Database',
      'requests that need it get 503 and readiness is 503 until it does',
      'serving again',
    );
  }
}
