import type { FileHandle } from 'node:fs/promises';
import type { Coding } from './contentCoding.ts';

/** Bytes [start, end) of an open file. The server closes the handle once the reply is written. */
export interface FileRange {
  handle: FileHandle;
  start: number;
  end: number;
}

/**
 * A body written piece by piece, files streamed from disk: `length` is its total byte length
 * (sent as content-length). Every FileRange's handle is closed after the reply, whatever happens.
 */
export interface PartsBody {
  length: number;
  parts: Array<string | Uint8Array | FileRange>;
}

/** What a handler answers; the server writes it (and is where faults may cut it short). */
export interface Reply {
  status: number;
  contentType: string;
  body: string | PartsBody;
  headers?: Record<string, string>;
  /**
   * The body in a content coding from stored frames (compressedFrames.ts), when the reply has
   * them for that coding; the server compresses `body` per request otherwise.
   */
  precompressed?: (coding: Coding) => Promise<PartsBody | undefined>;
}

/** A PartsBody of the given pieces; strings count as UTF-8. */
export function partsBody(parts: PartsBody['parts']): PartsBody {
  let length = 0;
  for (const p of parts) {
    if (typeof p === 'string') length += Buffer.byteLength(p, 'utf8');
    else if (p instanceof Uint8Array) length += p.byteLength;
    else length += p.end - p.start;
  }
  return { length, parts };
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
