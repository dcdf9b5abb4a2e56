import { DestinationError, type ObjectStore, PreconditionFailedError } from '../../kit/index.ts';
import type { Destination } from '../destination.ts';
import { type Lease, takeLease } from './leases.ts';
import { placeOf } from './place.ts';
import { storeSharedArea } from './sharedArea.ts';
import { sweep } from './sweep.ts';
import { beginTransaction } from './transaction.ts';

/**
 * The commit API over a sink's object store: written once for every store. What readers are
 * guaranteed depends only on whether the store has a link (docs/running-jobs.md, "What a reader sees"):
 *
 * - In place (S3, Azure): parts are written under their final names, then `_manifest.json` is put
 *   conditionally (create-only, or only over the version read), then `_SUCCESS`. A reader of the
 *   manifest sees one whole output; a reader listing the prefix can see the next run's parts beside
 *   the current ones while a run writes.
 * - Linked (a local disk): each commit is written into a folder of its own in the private area
 *   beside the output, and the output path, a symbolic link, is renamed over to it in one step. A
 *   reader of the manifest and a reader listing (or globbing) the folder both see the old output or
 *   the new one, never none and never a mix.
 *
 * Reads of the committed output on a linked store go through the folder the link names (never
 * rewritten once swapped in), so what is read is one commit's, and a version names that commit.
 */
export function storeDestination(store: ObjectStore): Destination {
  const place = placeOf(store);
  const { url, link } = place;
  const leases = new Set<Lease>();
  // Leases started by `startLease`, until their `begin` takes them.
  const started = new Map<string, Lease>();
  const fail = (action: string, error: unknown, signal?: AbortSignal): never => {
    // Stopped by the caller: say so, not "request aborted".
    if (signal?.aborted) throw signal.reason;
    if (error instanceof DestinationError) throw error;
    throw new DestinationError(url, action, error, true);
  };
  const readVersioned = async (name: string, signal?: AbortSignal) => {
    try {
      if (link === undefined) return await store.get(name, signal);
      const target = await link.target(signal);
      if (target === undefined) return undefined;
      // A folder of an older layout (the output a real folder) has no folder in the area to read.
      return target.startsWith('v/') ? await link.area.get(`${target}${name}`, signal) : await store.get(name, signal);
    } catch (error) {
      return fail(`reading ${name} from`, error, signal);
    }
  };
  return {
    url,
    multiFile: true,
    store,
    read: async (name, signal) => (await readVersioned(name, signal))?.body,
    readVersioned,
    async publish(name, body, condition, options = {}) {
      options.signal?.throwIfAborted();
      try {
        return (await store.put(name, body, { condition, contentType: options.contentType, signal: options.signal })).version;
      } catch (error) {
        if (error instanceof PreconditionFailedError) throw error;
        return fail(`writing ${name} to`, error, options.signal);
      }
    },
    async sweep(owned, signal, layout) {
      try {
        await sweep(layout === undefined ? place : placeOf(store, layout), owned, { signal });
      } catch (error) {
        fail('removing what earlier runs left at', error, signal);
      }
    },
    startLease(attemptId) {
      if (!started.has(attemptId)) started.set(attemptId, takeLease(place.area, attemptId));
    },
    begin(options, layout) {
      const lease = started.get(options.attemptId);
      started.delete(options.attemptId);
      return beginTransaction(layout === undefined ? place : placeOf(store, layout), options, undefined, lease);
    },
    shared: (id) => storeSharedArea(place, id, leases),
    check: store.check ? (signal, options) => store.check!(signal, options) : undefined,
    async close() {
      // A shard's lease is left to expire: its parts wait for the commit of the last shard.
      await Promise.allSettled([...leases].map((l) => l.release(false)));
      leases.clear();
      await Promise.allSettled([...started.values()].map((l) => l.release(true)));
      started.clear();
      await store.close();
    },
  };
}
