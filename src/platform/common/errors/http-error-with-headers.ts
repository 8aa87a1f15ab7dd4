import { HttpException } from '@nestjs/common';

/** An HTTP error whose answer carries headers too (`WWW-Authenticate`, `Retry-After`). */
export class HttpErrorWithHeaders extends HttpException {
  constructor(
    status: number,
    message: string,
    readonly headers: Readonly<Record<string, string>>,
  ) {
    super(message, status);
  }
}
