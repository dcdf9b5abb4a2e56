/** What a handler answers; the server writes it (and is where faults may cut it short). */
export interface Reply {
  status: number;
  contentType: string;
  body: string;
  headers?: Record<string, string>;
}

export function json(status: number, value: unknown, headers?: Record<string, string>): Reply {
  return jsonText(status, JSON.stringify(value), headers);
}

/** A body that is already JSON text (result pages splice the engine's row text in verbatim). */
export function jsonText(status: number, text: string, headers?: Record<string, string>): Reply {
  return headers === undefined
    ? { status, contentType: 'application/json; charset=utf-8', body: text }
    : { status, contentType: 'application/json; charset=utf-8', body: text, headers };
}

export function errorReply(status: number, message: string, headers?: Record<string, string>): Reply {
  return json(status, { error: message }, headers);
}
