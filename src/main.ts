// first: tracing, when asked for, must be in place before anything loads http or express
import './tracing/register';
import { serve } from './serve';

void serve();
