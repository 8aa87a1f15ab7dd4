/** The Error object: its schema, its documented examples, and errors that carry headers. */
export { ErrorBody } from './error-body.dto';
export { errorExamples } from './error-examples';
export { HttpErrorWithHeaders } from './http-error-with-headers';
