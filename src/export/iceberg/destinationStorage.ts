import { type ObjectStore, PreconditionFailedError } from '../../kit/index.ts';
import type { Destination } from '../destination.ts';
import { storeDestination } from '../storage/storeDestination.ts';
import { IcebergUnsupportedDestinationError } from './errors.ts';
import type { TableStorage } from './storage.ts';

/**
 * The table storage of a job output: the sink's destination, through the optional calls the kit
 * declares for table formats (`list`, `put`, `remove`, and `publish` create-only as the commit point).
 */
export function destinationStorage(destination: Destination): TableStorage {
  const { list, put, publish, remove } = destination;
  if (list === undefined || put === undefined || publish === undefined || remove === undefined) {
    const missing = (['list', 'put', 'publish', 'remove'] as const).filter((m) => destination[m] === undefined);
    throw new IcebergUnsupportedDestinationError(destination.url, missing);
  }
  return {
    url: destination.url,
    read: (name, signal) => destination.read(name, signal),
    list: (prefix, signal) => list.call(destination, prefix, signal),
    async createIfAbsent(name, body, signal) {
      try {
        await publish.call(destination, name, body, { ifAbsent: true }, { contentType: 'application/json', ...(signal ? { signal } : {}) });
        return true;
      } catch (error) {
        if (error instanceof PreconditionFailedError) return false;
        throw error;
      }
    },
    async put(name, body, options = {}) {
      const chunks = body instanceof Uint8Array ? [body] : body;
      const stream = (async function* () {
        yield* chunks;
      })();
      return (await put.call(destination, name, stream, options)).bytes;
    },
    delete: (names) => (names.length === 0 ? Promise.resolve() : remove.call(destination, names)),
    // The destination is the caller's to close.
    async close() {},
  };
}

/** The table storage of a sink's object store (`file.create(...)`, `s3.create(...)`), for `writeIcebergTable`. */
export function tableStorage(store: ObjectStore): TableStorage {
  const destination = storeDestination(store);
  return { ...destinationStorage(destination), close: () => destination.close() };
}
