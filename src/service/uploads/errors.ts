import { HttpError } from '../http/errors.ts';

/** A refused upload: 400 with a message that names the line and what is wrong. */
export class UploadError extends HttpError {

  constructor(message: string) {
    super(400, message);
  }
}
