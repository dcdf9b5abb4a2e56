/**
 * An answer other than 2xx that a handler decided on. Its message goes to the client as
 * `{"error": message}`; anything else thrown becomes 500 `Internal error` and is only logged.
 */
export class HttpError extends Error {
  override readonly name: string = 'HttpError';
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(status: number, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.headers = headers;
  }
}

export const badRequest = (message: string): HttpError => new HttpError(400, message);
