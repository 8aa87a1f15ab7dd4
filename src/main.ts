// first: a Node.js the service cannot run on says so, before a native module crashes it
import './config/require-supported-node';
// then tracing, when asked for, before anything loads http or express
import './tracing/register';
import { serve } from './serve';

void serve();
