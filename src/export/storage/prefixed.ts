import type { ObjectStore } from '../../kit/index.ts';

/** The objects of `store` under `prefix` (ending in `/`), as a store of their own. */
export function prefixed(store: ObjectStore, prefix: string): ObjectStore {
  const strip = (names: string[]): string[] => names.map((n) => n.slice(prefix.length));
  return {
    url: `${store.url}/${prefix.slice(0, -1)}`,
    get: (name, signal) => store.get(`${prefix}${name}`, signal),
    put: (name, body, options) => store.put(`${prefix}${name}`, body, options),
    head: (name, signal) => store.head(`${prefix}${name}`, signal),
    list: async (p, signal) => strip(await store.list(`${prefix}${p}`, signal)),
    delete: (names, signal) => store.delete(names.map((n) => `${prefix}${n}`), signal),
    // The store is its owner's to close.
    close: async () => undefined,
  };
}
