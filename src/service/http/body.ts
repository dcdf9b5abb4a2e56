import type { IncomingMessage } from 'node:http';
import type { z } from 'zod';
import { HttpError } from './errors.ts';
import { formatPath } from '../settings.ts';

/** Reads the whole request body, refusing (413) more than `limit` bytes. */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = () => new HttpError(413, `Request body too large: the limit is ${limit} bytes`, { connection: 'close' });
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * Parses a JSON body whatever the Content-Type (protocol.md section 1: some clients send none).
 * An empty body is `undefined`, which the operations that allow it treat as `{}`.
 */
export function parseJson(body: Buffer): unknown {
  const text = body.toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, `Bad Request: the body is not valid JSON (${(err as Error).message})`);
  }
}

/** Validates a parsed body; the 400 names each offending field. */
export function validateBody<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  if (value === undefined) throw new HttpError(400, 'Bad Request: a JSON object body is required');
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new HttpError(400, `Bad Request: ${describeIssues(parsed.error.issues)}`);
}

export function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .map((i) => {
      const where = i.path.length === 0 ? '' : `${formatPath(i.path)}: `;
      if (i.code === 'unrecognized_keys') return `${where}unknown field${i.keys.length > 1 ? 's' : ''} ${i.keys.map((k) => `"${k}"`).join(', ')}`;
      if (i.path.length === 0 && i.code === 'invalid_type') return `the body must be a JSON object`;
      return `${where}${i.message}`;
    })
    .join('; ');
}
