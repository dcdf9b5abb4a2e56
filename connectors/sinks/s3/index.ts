import type { S3ClientConfig } from '@aws-sdk/client-s3';
import {
  type BeginOptions,
  ConfigError,
  defineSink,
  type Destination,
  DestinationCheckError,
  DestinationError,
  type Marker,
  PreconditionFailedError,
  type PublishCondition,
  type StagedStream,
  type Transaction,
} from '../../../src/kit/index.ts';
import { ConditionFailed, deferredStore, type ObjectStore, S3ProbeError, uploadCounted } from './objectStore.ts';
import { s3Config, type S3Config, s3Options } from './options.ts';
import { s3SharedArea } from './shared.ts';
import { keyOf, parseS3Url, type S3Location } from './url.ts';

export { s3Config, type S3Config, s3Options } from './options.ts';

/**
 * S3 has no rename, so the guarantee differs from the file sink. Data objects are written under
 * their final keys through multipart uploads (an object appears only when complete); commit
 * then puts `_manifest.json` and `_SUCCESS` (each PUT replaces atomically) and finally deletes
 * the previous manifest's objects that the new one does not list. Readers that go through the
 * manifest (or wait for `_SUCCESS`) always see one complete output. A reader listing the prefix
 * during a run can see new objects next to old ones. Names carry the execution id, but the same
 * execution exported with another layout (columns, format options, rolling) puts other bytes under
 * the same key: before the first upload that overwrites a key the committed output lists, its
 * markers (`_SUCCESS`, then `_manifest.json`) are deleted, so a failure from there on leaves no
 * committed output instead of a manifest that describes changed objects. Abort and failure abort
 * in-flight uploads (after their parts settle) and delete the objects this run wrote, except keys
 * a still-committed output lists. A stop (`suspend`, SIGTERM) aborts the
 * in-flight uploads but keeps finished objects and the journal for the next attempt.
 *
 * Resume: parts are at their final keys already, so the staging area is the journal object
 * `<prefix>/.sluice-journal-<attemptId>.json`; `retain` checks that each journaled object
 * exists with its size. Objects of an abandoned attempt (a killed run) that no manifest lists
 * are removed by the next commit at the prefix: it lists the prefix and deletes part files
 * (`[col=value/...]part-NNNNN-*.ext`) and journals that the new manifest does not name. Other
 * objects under the prefix are never touched. Multipart uploads the killed run left open are
 * not listed here: an AbortIncompleteMultipartUpload lifecycle rule on the bucket reclaims them.
 */
export const s3 = defineSink({
  type: 's3',
  description: 'Amazon S3 or a compatible store, multipart uploads, manifest as the commit point.',
  paths: 's3://bucket/prefix',
  config: s3Config,
  options: { key: 's3', schema: s3Options },
  // Anything that starts like an S3 URL, so `S3://b` or `s3:/b` are told what is wrong with them.
  accepts: (url) => /^s3:/i.test(url),
  create: (config: S3Config) => {
    const location = parseS3Url(config.url)!;
    // The SDK loads with the first request, so validating or listing sinks never pays for it.
    return s3Destination(location, deferredStore(async () => (await import('./sdkStore.ts')).sdkObjectStore({
      bucket: location.bucket,
      client: clientConfig(config),
      sse: config.sse,
      sseKmsKeyId: config.sse_kms_key_id,
      storageClass: config.storage_class,
      partSize: config.part_size_mb * 1024 * 1024,
      queueSize: config.queue_size,
    })));
  },
});

/** The SDK client settings of an `s3` config (region, endpoint, profile, static credentials). */
export function clientConfig(config: S3Config): S3ClientConfig {
  return {
    ...(config.region ? { region: config.region } : {}),
    ...(config.endpoint ? { endpoint: config.endpoint } : {}),
    ...(config.profile ? { profile: config.profile } : {}),
    forcePathStyle: config.force_path_style,
    ...(config.access_key_id && config.secret_access_key
      ? {
          credentials: {
            accessKeyId: config.access_key_id,
            secretAccessKey: config.secret_access_key,
            ...(config.session_token ? { sessionToken: config.session_token } : {}),
          },
        }
      : {}),
  };
}

export function s3Destination(location: S3Location, store: ObjectStore): Destination {
  const url = `s3://${location.bucket}${location.prefix ? `/${location.prefix}` : ''}`;
  return {
    url,
    multiFile: true,
    async read(name, signal) {
      try {
        return await store.get(keyOf(location, name), signal);
      } catch (error) {
        // Stopped by the caller: say so, not "request aborted".
        if (signal?.aborted) throw signal.reason;
        throw new DestinationError(url, `reading ${name} from`, error, true);
      }
    },
    async readVersioned(name, signal) {
      try {
        const found = await store.getVersioned(keyOf(location, name), signal);
        return found === undefined ? undefined : { body: found.body, version: found.etag };
      } catch (error) {
        throw new DestinationError(url, `reading ${name} from`, error, true);
      }
    },
    async list(prefix, signal) {
      const base = location.prefix === '' ? '' : `${location.prefix}/`;
      try {
        return (await store.list(`${base}${prefix}`, signal)).map((k) => k.slice(base.length)).sort();
      } catch (error) {
        throw new DestinationError(url, `listing ${prefix || 'the objects'} at`, error, true);
      }
    },
    async publish(name, body, condition, options = {}) {
      options.signal?.throwIfAborted();
      return putMarker(store, url, keyOf(location, name), name, body, options.contentType, condition);
    },
    async put(name, body, options = {}) {
      let bytes: number;
      try {
        bytes = await uploadCounted(store, keyOf(location, name), body, options);
      } catch (error) {
        if (options.signal?.aborted) throw options.signal.reason;
        throw error instanceof DestinationError ? error : new DestinationError(url, `uploading ${name} to`, error, true);
      }
      return { bytes };
    },
    async remove(names) {
      try {
        await store.delete(names.map((n) => keyOf(location, n)));
      } catch (error) {
        throw new DestinationError(url, `removing ${names.length} objects from`, error, true);
      }
    },
    async sweep(owned, signal) {
      let stale: string[] = [];
      try {
        stale = await leftovers(store, location, new Set(owned.map((n) => keyOf(location, n))), signal);
        await store.delete(stale);
      } catch (error) {
        throw new DestinationError(url, `removing ${stale.length || 'the'} objects earlier runs left at`, error, true);
      }
    },
    async begin(options) {
      let journal: Uint8Array | undefined;
      if (options.resume) {
        try {
          journal = await store.get(keyOf(location, journalName(options.attemptId)), options.signal);
        } catch (error) {
          if (options.signal?.aborted) throw options.signal.reason;
          throw new DestinationError(url, 'reading the resume journal from', error, true);
        }
      }
      return s3Transaction(location, store, url, options, journal);
    },
    shared(id) {
      return s3SharedArea(location, store, url, id, (options, files) => s3Transaction(location, store, url, options, undefined, files));
    },
    async check(signal) {
      try {
        await store.probe?.(signal);
      } catch (error) {
        if (error instanceof S3ProbeError && error.problem === 'credentials') throw new ConfigError(`${url}: ${error.message}`, { cause: error.cause });
        if (error instanceof S3ProbeError) throw new DestinationCheckError(url, error.message, error.cause);
        throw new DestinationError(url, 'checking', error, true);
      }
    },
    async close() {
      store.close();
    },
  };
}

/** One PUT, conditional when asked: a refused condition is the kit's `PreconditionFailedError`. */
async function putMarker(store: ObjectStore, url: string, key: string, name: string, body: Uint8Array, contentType: string | undefined, condition: PublishCondition | undefined): Promise<string> {
  try {
    return await store.put(key, body, contentType, condition);
  } catch (error) {
    if (error instanceof ConditionFailed) throw new PreconditionFailedError(url, name, error.message, error);
    throw new DestinationError(url, `writing ${name} to`, error, true);
  }
}

const JOURNAL_PREFIX = '.sluice-journal-';
const journalName = (attemptId: string): string => `${JOURNAL_PREFIX}${attemptId}.json`;
/** Names a sluice export writes under its prefix (relative to it): part files, maybe in Hive directories, and journals. */
const OURS = /^(?:(?:[^/]+=[^/]*\/)*part-\d{5,}-[A-Za-z0-9._-]+\.[A-Za-z0-9]+|\.sluice-journal-[A-Za-z0-9._-]+\.json)$/;

/** Part files and journals under the prefix (written by sluice: `OURS`) that are not in `keep`. */
async function leftovers(store: ObjectStore, location: S3Location, keep: ReadonlySet<string>, signal?: AbortSignal): Promise<string[]> {
  const base = location.prefix === '' ? '' : `${location.prefix}/`;
  return (await store.list(base, signal)).filter((k) => OURS.test(k.slice(base.length)) && !keep.has(k));
}

/** `adopted`: objects other writers uploaded (the parts of a sharded export) that the commit publishes and an abort leaves alone. */
function s3Transaction(location: S3Location, store: ObjectStore, url: string, options: BeginOptions, journal: Uint8Array | undefined, adopted: readonly string[] = []): Transaction {
  const previous = new Set(options.previous.map((n) => keyOf(location, n)));
  const theirs = adopted.map((n) => keyOf(location, n));
  const written = new Set<string>();
  const retained = new Set<string>();
  // Committed objects the new output keeps (an append): never deleted as stale.
  const carried = new Set<string>();
  const journalKey = keyOf(location, journalName(options.attemptId));
  let journalSaved = journal !== undefined;
  const inFlight = new Map<Promise<unknown>, AbortController>();
  // Set once the committed output's markers are gone: its objects are then no longer protected.
  let withdrawal: Promise<void> | undefined;
  const withdraw = (): Promise<void> =>
    (withdrawal ??= (async () => {
      for (const marker of options.markers ?? []) {
        const key = keyOf(location, marker);
        if (previous.has(key)) await store.delete([key]);
      }
    })());
  const abort = async (_reason?: unknown, keep: readonly string[] = []): Promise<void> => {
    for (const controller of inFlight.values()) controller.abort(new Error('transaction aborted'));
    await Promise.allSettled([...inFlight.keys()]);
    const protect = new Set(keep.map((n) => keyOf(location, n)));
    const ours = [...written, ...retained].filter((k) => (withdrawal !== undefined || !previous.has(k)) && !protect.has(k));
    if (journalSaved) ours.push(journalKey);
    await store.delete(ours).catch(() => undefined);
  };

  return {
    journal,

    async write(name, body, opts = {}) {
      const key = keyOf(location, name);
      const controller = new AbortController();
      const signal = opts.signal ? AbortSignal.any([opts.signal, controller.signal]) : controller.signal;
      let bytes = 0;
      async function* counted() {
        for await (const chunk of body) {
          bytes += chunk.byteLength;
          yield chunk;
        }
      }
      if (previous.has(key)) {
        try {
          await withdraw();
        } catch (error) {
          throw new DestinationError(url, `withdrawing the committed output before overwriting ${name} at`, error, true);
        }
      }
      // Recorded before the upload starts: an upload that completes after abort began is still cleaned up.
      written.add(key);
      const done = store.upload(key, counted(), { contentType: opts.contentType, signal });
      inFlight.set(done, controller);
      try {
        await done;
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        throw error instanceof DestinationError ? error : new DestinationError(url, `uploading ${name} to`, error, true);
      } finally {
        inFlight.delete(done);
      }
      return { bytes };
    },

    async retain(streams: readonly StagedStream[]) {
      const kept: string[] = [];
      for (const { name, bytes } of streams) {
        let size: number | undefined;
        try {
          size = await store.head(keyOf(location, name), options.signal);
        } catch (error) {
          throw new DestinationError(url, `checking ${name} at`, error, true);
        }
        // An object appears only when its upload completed: the right size means it is whole.
        if (size !== bytes) continue;
        kept.push(name);
        retained.add(keyOf(location, name));
      }
      return kept;
    },

    async saveJournal(body: Uint8Array) {
      journalSaved = true;
      try {
        await store.put(journalKey, body, 'application/json');
      } catch (error) {
        throw new DestinationError(url, 'saving the resume journal to', error, true);
      }
    },

    async commit(markers: readonly Marker[]) {
      await Promise.allSettled([...inFlight.keys()]);
      for (const marker of markers) {
        // Markers this transaction withdrew are gone: replacing one then means creating it.
        const condition = marker.condition !== undefined && withdrawal !== undefined && previous.has(keyOf(location, marker.name)) ? { ifAbsent: true as const } : marker.condition;
        await putMarker(store, url, keyOf(location, marker.name), marker.name, marker.body, marker.contentType, condition);
      }
      const keep = new Set([...written, ...retained, ...carried, ...theirs, ...markers.map((m) => keyOf(location, m.name))]);
      let stale: string[] = [];
      try {
        // The previous manifest's objects, and what abandoned attempts left that no manifest lists.
        const abandoned = await leftovers(store, location, keep);
        stale = [...new Set([...[...previous].filter((k) => !keep.has(k)), ...abandoned])];
        await store.delete(stale);
      } catch (error) {
        // The new output is committed; leftovers are unreferenced by the manifest. Say so loudly.
        throw new DestinationError(url, `committed, but removing ${stale.length} objects of the previous output from`, error, true);
      }
    },

    abort,

    async carry(names: readonly string[]) {
      // The objects stay where they are; the commit only must not remove them as the previous output's.
      for (const name of names) carried.add(keyOf(location, name));
    },

    async suspend() {
      if (!journalSaved) return abort();
      // Open uploads are aborted (no parts left behind); finished objects and the journal stay for
      // the next attempt. What the journal does not list is swept by the next commit at the prefix.
      for (const controller of inFlight.values()) controller.abort(new Error('transaction suspended'));
      await Promise.allSettled([...inFlight.keys()]);
    },
  };
}
