import { DestinationError, type ObjectStore, PreconditionFailedError } from '../../kit/index.ts';
import type { Destination } from '../destination.ts';
import { IcebergUnsupportedDestinationError } from './errors.ts';
import type { TableStorage } from './storage.ts';

/** The table storage of a job output: a view of its sink's object store (stdout has none). */
export function destinationStorage(destination: Destination): TableStorage {
  if (destination.store === undefined) throw new IcebergUnsupportedDestinationError(destination.url, ['an object store']);
  // The destination is the caller's to close.
  return { ...tableStorage(destination.store), close: async () => undefined };
}

/**
 * The table storage of a sink's object store (`file.create(...)`, `s3.create(...)`), for
 * `writeIcebergTable` and the Iceberg commit: the seam's own calls, with `createIfAbsent` as the
 * conditional put that is a path table's commit point. Failures name the table and the call.
 */
export function tableStorage(store: ObjectStore): TableStorage {
  const { url } = store;
  const fail = (action: string, error: unknown, signal?: AbortSignal): never => {
    // Stopped by the caller: say so, not "request aborted".
    if (signal?.aborted) throw signal.reason;
    if (error instanceof DestinationError) throw error;
    throw new DestinationError(url, action, error, true);
  };
  return {
    url,
    read: (name, signal) => store.get(name, signal).then((found) => found?.body, (error: unknown) => fail(`reading ${name} from`, error, signal)),
    list: (prefix, signal) => store.list(prefix, signal).then((names) => names.sort(), (error: unknown) => fail(`listing ${prefix || 'the objects'} at`, error, signal)),
    async createIfAbsent(name, body, signal) {
      try {
        await store.put(name, body, { condition: { ifAbsent: true }, contentType: 'application/json', signal });
        return true;
      } catch (error) {
        if (error instanceof PreconditionFailedError) return false;
        return fail(`writing ${name} to`, error, signal);
      }
    },
    async put(name, body, options = {}) {
      try {
        return (await store.put(name, body, { contentType: options.contentType, signal: options.signal })).bytes;
      } catch (error) {
        return fail(`writing ${name} to`, error, options.signal);
      }
    },
    delete: (names) => (names.length === 0 ? Promise.resolve() : store.delete(names).catch((error: unknown) => fail(`removing ${names.length} objects from`, error))),
    close: () => store.close(),
  };
}
