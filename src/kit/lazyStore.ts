import type { ObjectStore } from './store.ts';

/**
 * An object store made on first use: `load` runs (once) when the first call arrives, so creating a
 * sink costs nothing (no SDK loaded, no client made) until it is written to or read.
 */
export function lazyStore(url: string, load: () => Promise<ObjectStore>): ObjectStore {
  let loading: Promise<ObjectStore> | undefined;
  const store = (): Promise<ObjectStore> => (loading ??= load());
  return {
    url,
    get: async (name, signal) => (await store()).get(name, signal),
    put: async (name, body, options) => (await store()).put(name, body, options),
    head: async (name, signal) => (await store()).head(name, signal),
    list: async (prefix, signal) => (await store()).list(prefix, signal),
    delete: async (names, signal) => (await store()).delete(names, signal),
    check: async (signal, options) => (await store()).check?.(signal, options),
    close: async () => {
      if (loading !== undefined) await (await loading).close();
    },
  };
}
