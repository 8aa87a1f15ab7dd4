// first: a Node.js the service cannot run on says so, before a native module crashes it
import './platform/config/require-supported-node';
// then tracing, when asked for, before anything loads http or express
import './platform/tracing/register';
import { serve } from './serve';

void serve();
