import { HttpError } from '../http/errors.ts';

/**
 * A refusal of a view operation: `status` and `message` go to the client as `{"error": message}`.
 * Messages name the view and say what to do.
 */
export class ViewError extends HttpError {

  constructor(status: 400 | 403 | 404 | 409, message: string) {
    super(status, message);
  }
}

/**
 * Why a refresh execution that ran could not become the view's table (storage quota, truncated
 * result). The execution ends FAILED with this message and the previous table stays.
 */
export class ViewRefreshError extends Error {
  override readonly name = 'ViewRefreshError';
}
