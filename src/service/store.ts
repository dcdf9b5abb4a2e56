import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isAtomicTemp, writeFileAtomically } from '../kit/atomicFile.ts';

/**
 * A directory of JSON documents, one file per record, each written crash-safely
 * (`writeFileAtomically`), so a reader (or a restart after a crash) sees the old document or the
 * new one, never half of either. Writes to one record are chained
 * so a slow earlier write cannot land after, and clobber, a later one.
 */
export class JsonStore<T> {
  readonly dir: string;
  readonly #chains = new Map<string, Promise<void>>();

  constructor(dir: string) {
    this.dir = dir;
  }

  async init(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    // Temp files of writes interrupted by a crash.
    for (const name of await readdir(this.dir)) if (isAtomicTemp(name)) await rm(join(this.dir, name), { force: true });
  }

  async loadAll(parse: (raw: unknown, id: string) => T): Promise<Map<string, T>> {
    const out = new Map<string, T>();
    for (const name of await readdir(this.dir)) {
      if (!name.endsWith('.json')) continue;
      const id = name.slice(0, -'.json'.length);
      const path = join(this.dir, name);
      try {
        out.set(id, parse(JSON.parse(await readFile(path, 'utf8')), id));
      } catch (cause) {
        throw new Error(`${path}: not a valid stored record (${(cause as Error).message})`, { cause });
      }
    }
    return out;
  }

  put(id: string, doc: T): Promise<void> {
    const text = JSON.stringify(doc);
    return this.#chain(id, () => this.#write(id, text));
  }

  #chain(id: string, op: () => Promise<void>): Promise<void> {
    const prev = this.#chains.get(id) ?? Promise.resolve();
    const next = prev.then(op);
    const settled = next.catch(() => {});
    this.#chains.set(id, settled);
    void settled.then(() => {
      if (this.#chains.get(id) === settled) this.#chains.delete(id);
    });
    return next;
  }

  /**
   * Deletes the record's file, after the writes of it already started (chained like a write, so a
   * slow earlier write cannot bring it back). Removing a missing record is not an error.
   */
  remove(id: string): Promise<void> {
    return this.#chain(id, () => rm(join(this.dir, `${id}.json`), { force: true }));
  }

  /** Resolves when every write started so far has landed. */
  async flush(): Promise<void> {
    await Promise.all([...this.#chains.values()]);
  }

  async #write(id: string, text: string): Promise<void> {
    await writeFileAtomically(join(this.dir, `${id}.json`), text, { mode: 0o600 });
  }
}
