import { createHash, randomBytes } from 'node:crypto';

/** An object as the stand-in keeps it. */
export interface StoredGcsObject {
  readonly name: string;
  readonly body: Buffer;
  readonly generation: string;
  readonly contentType: string;
  readonly created: Date;
}

export type Buckets = Map<string, Map<string, StoredGcsObject>>;

let lastGeneration = 0;

/** Generations as Google makes them: microseconds since the epoch, strictly increasing. */
export function nextGeneration(): string {
  lastGeneration = Math.max(lastGeneration + 1, Date.now() * 1000);
  return String(lastGeneration);
}

/** The Object resource of the JSON API for a stored object. */
export function objectResource(base: string, bucket: string, o: StoredGcsObject): Record<string, unknown> {
  const path = `b/${encodeURIComponent(bucket)}/o/${encodeURIComponent(o.name)}`;
  const time = o.created.toISOString();
  return {
    kind: 'storage#object',
    id: `${bucket}/${o.name}/${o.generation}`,
    selfLink: `${base}/storage/v1/${path}`,
    mediaLink: `${base}/download/storage/v1/${path}?generation=${o.generation}&alt=media`,
    name: o.name,
    bucket,
    generation: o.generation,
    metageneration: '1',
    contentType: o.contentType,
    storageClass: 'STANDARD',
    size: String(o.body.byteLength),
    md5Hash: createHash('md5').update(o.body).digest('base64'),
    etag: createHash('md5').update(o.generation).digest('base64').slice(0, 12),
    timeCreated: time,
    updated: time,
    timeStorageClassUpdated: time,
  };
}

/**
 * Whether a write or read may go ahead under the request's generation preconditions:
 * `ifGenerationMatch=0` only while no object exists, another number only while the object is
 * that generation; `ifGenerationNotMatch` the opposite.
 */
export function preconditionHolds(query: URLSearchParams, current: StoredGcsObject | undefined): boolean {
  const match = query.get('ifGenerationMatch');
  const notMatch = query.get('ifGenerationNotMatch');
  const generation = current?.generation ?? '0';
  if (match !== null && match !== generation) return false;
  if (notMatch !== null && notMatch === generation) return false;
  return true;
}

/** A partial response (`fields=items(name),nextPageToken`): only the selected fields of a resource. */
export function selectFields(resource: unknown, fields: string | null): unknown {
  if (fields === null || fields === '') return resource;
  return pick(resource, parseFields(fields));
}

type Selection = Map<string, Selection | true>;

function parseFields(text: string): Selection {
  const selection: Selection = new Map();
  let i = 0;
  const parse = (into: Selection): void => {
    while (i < text.length && text[i] !== ')') {
      const name = /^[\w/]+/.exec(text.slice(i))?.[0] ?? '';
      if (name === '') throw new Error(`bad fields selector near ${text.slice(i)}`);
      i += name.length;
      const path = name.split('/');
      let at = into;
      for (const part of path.slice(0, -1)) {
        const next = at.get(part);
        at = next instanceof Map ? next : (at.set(part, new Map()).get(part) as Selection);
      }
      const last = path.at(-1)!;
      if (text[i] === '(') {
        i += 1;
        const inner: Selection = new Map();
        parse(inner);
        if (text[i] !== ')') throw new Error(`unclosed ( in fields ${text}`);
        i += 1;
        at.set(last, inner);
      } else {
        at.set(last, true);
      }
      if (text[i] === ',') i += 1;
    }
  };
  parse(selection);
  return selection;
}

function pick(value: unknown, selection: Selection): unknown {
  if (Array.isArray(value)) return value.map((v) => pick(v, selection));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, sub] of selection) {
    const v = (value as Record<string, unknown>)[key];
    if (v !== undefined) out[key] = sub === true ? v : pick(v, sub);
  }
  return out;
}

export function newUploadId(): string {
  return randomBytes(12).toString('base64url');
}
