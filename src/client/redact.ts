/**
 * The API key must never reach an error message, a log line or a printed URL. URLs are built without
 * it (it travels in a header by default); when the caller chose the `api_key` query parameter, every
 * URL that leaves the transport goes through `redactUrl` first, and server text goes through `scrub`.
 */

const KEY_PARAM = /([?&]api_key=)[^&#]*/gi;

export function redactUrl(url: string): string {
  return url.replace(KEY_PARAM, '$1***');
}

/** Removes every occurrence of `secret` from `text` (in case a server echoes what it was sent). */
export function scrub(text: string, secret: string | undefined): string {
  if (!secret) return text;
  return text.split(secret).join('***').split(encodeURIComponent(secret)).join('***');
}
