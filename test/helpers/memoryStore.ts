import { createHash } from 'node:crypto';
import { type ObjectStore, PreconditionFailedError } from '../../src/kit/index.ts';

/**
 * Objects kept in a Map of this process: the whole of what a sink implements, as a connector written
 * outside src/ would. Versions are content hashes; a conditional put is checked and done in one step
 * (nothing else runs in between on one thread).
 */
export function memoryStore(url: string, objects = new Map<string, { body: Uint8Array; modified: number }>()): ObjectStore {
  const version = (body: Uint8Array): string => createHash('sha256').update(body).digest('hex');
  return {
    url,
    async get(name) {
      const found = objects.get(name);
      return found && { body: found.body, version: version(found.body) };
    },
    async put(name, body, options = {}) {
      const chunks: Uint8Array[] = [];
      if (body instanceof Uint8Array) chunks.push(body);
      else for await (const chunk of body) chunks.push(chunk);
      const bytes = Buffer.concat(chunks);
      const now = objects.get(name);
      const condition = options.condition;
      if (condition !== undefined && ('ifAbsent' in condition ? now !== undefined : now === undefined || version(now.body) !== condition.ifVersion)) {
        throw new PreconditionFailedError(url, name, `${name} changed since it was read`);
      }
      objects.set(name, { body: bytes, modified: Date.now() });
      return { bytes: bytes.byteLength, version: version(bytes) };
    },
    async head(name) {
      const found = objects.get(name);
      return found && { size: found.body.byteLength, version: version(found.body), modified: found.modified };
    },
    async list(prefix) {
      return [...objects.keys()].filter((n) => n.startsWith(prefix));
    },
    async delete(names) {
      for (const name of names) objects.delete(name);
    },
    async close() {},
  };
}
