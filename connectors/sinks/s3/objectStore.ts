/** The few S3 calls the sink makes; everything else about the SDK stays out of the sink. */
export interface ObjectStore {
  /** Streams `body` through a multipart upload; the object appears only when complete. */
  upload(key: string, body: AsyncIterable<Uint8Array>, options: { contentType?: string; signal?: AbortSignal }): Promise<void>;
  /**
   * Replaces the object atomically; resolves to its ETag. `condition`: only if absent
   * (`If-None-Match: *`) or only while it has this ETag (`If-Match`); else `ConditionFailed`.
   */
  put(key: string, body: Uint8Array, contentType?: string, condition?: PutCondition): Promise<string>;
  get(key: string, signal?: AbortSignal): Promise<Uint8Array | undefined>;
  /** The object and its ETag, or undefined when it does not exist. */
  getVersioned(key: string, signal?: AbortSignal): Promise<{ body: Uint8Array; etag: string } | undefined>;
  /** The object's size, or undefined when it does not exist. */
  head(key: string, signal?: AbortSignal): Promise<number | undefined>;
  /** Every key that starts with `prefix`. */
  list(prefix: string, signal?: AbortSignal): Promise<string[]>;
  delete(keys: readonly string[]): Promise<void>;
  /**
   * Checks, without writing, what can be known before an export starts: that credentials resolve
   * and that the bucket answers. Throws an `S3ProbeError` saying which of the two failed.
   */
  probe?(signal?: AbortSignal): Promise<void>;
  close(): void;
}

export type PutCondition = { readonly ifAbsent: true } | { readonly ifVersion: string };

/** A conditional PUT was refused (412, or 409 when another conditional write to the key was in flight). */
export class ConditionFailed extends Error {
  constructor(key: string, cause: unknown) {
    super(`${key} changed since it was read (another writer committed first)`, { cause });
  }
}

/** What `ObjectStore.probe` found missing: no credentials (nothing to retry), or a bucket that did not answer. */
export class S3ProbeError extends Error {
  readonly problem: 'credentials' | 'bucket';
  constructor(problem: 'credentials' | 'bucket', message: string, cause: unknown) {
    super(message, { cause });
    this.name = 'S3ProbeError';
    this.problem = problem;
  }
}


/**
 * An ObjectStore made on first use: `load` runs (once) when the first call arrives, so creating a
 * destination costs nothing until it is written to or read.
 */
export function deferredStore(load: () => Promise<ObjectStore>): ObjectStore {
  let loading: Promise<ObjectStore> | undefined;
  let loaded: ObjectStore | undefined;
  const store = (): Promise<ObjectStore> =>
    (loading ??= load().then((s) => {
      loaded = s;
      return s;
    }));
  return {
    upload: async (key, body, options) => (await store()).upload(key, body, options),
    put: async (key, body, contentType, condition) => (await store()).put(key, body, contentType, condition),
    get: async (key, signal) => (await store()).get(key, signal),
    getVersioned: async (key, signal) => (await store()).getVersioned(key, signal),
    head: async (key, signal) => (await store()).head(key, signal),
    list: async (prefix, signal) => (await store()).list(prefix, signal),
    delete: async (keys) => (await store()).delete(keys),
    probe: async (signal) => (await store()).probe?.(signal),
    close: () => loaded?.close(),
  };
}

/** `store.upload` of `body`, resolving to the bytes it carried. */
export async function uploadCounted(
  store: ObjectStore,
  key: string,
  body: AsyncIterable<Uint8Array>,
  options: { contentType?: string | undefined; signal?: AbortSignal | undefined },
): Promise<number> {
  let bytes = 0;
  async function* counted() {
    for await (const chunk of body) {
      bytes += chunk.byteLength;
      yield chunk;
    }
  }
  await store.upload(key, counted(), { ...(options.contentType ? { contentType: options.contentType } : {}), ...(options.signal ? { signal: options.signal } : {}) });
  return bytes;
}
