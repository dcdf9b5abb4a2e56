import { HttpError } from '../http/errors.ts';

/** A refused upload: 400 with a message that names the line and what is wrong. */
export class UploadError extends HttpError {

  constructor(message: string) {
    super(400, message);
  }
}

/**
 * An upload that would take the team past its storage quota: 402, as every request that would
 * exceed the team's configured limits (protocol.md section 6). Nothing is written.
 */
export class StorageQuotaError extends HttpError {
  constructor(message: string) {
    super(402, message);
  }
}
