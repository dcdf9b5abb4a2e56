import { randomBytes } from 'node:crypto';
import { link, mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { type BeginOptions, DestinationError, type SharedArea, type Transaction, type WriteOptions } from '../../../src/kit/index.ts';
import { inside, isCode, publishFile, writeDurably } from './index.ts';

/**
 * The shared staging of a sharded export into the directory `target`: a sibling directory
 * `.<dir>.sluice-shards-<id>` (on the same filesystem, so a shared mount works for every machine),
 * with the records under `records/` and the part files under `data/`. A part is written to a temp
 * name, synced and renamed into place, so a name holds a complete part or nothing. The committer's
 * transaction hard-links the parts into its own staging directory, which the file sink's commit
 * swaps in by rename (conditional on the manifest it replaces): the parts are never copied, and a
 * losing committer removes only its links.
 */
export function fileSharedArea(
  target: string,
  url: string,
  id: string,
  begin: (options: BeginOptions) => Promise<Transaction>,
  /** The staging folder `begin` makes for an attempt id. */
  stagingOf: (attemptId: string) => string,
): SharedArea {
  const root = join(dirname(target), `.${basename(target)}.sluice-shards-${id}`);
  const records = join(root, 'records');
  const data = join(root, 'data');
  const areaUrl = `file://${root}`;
  const fail = (action: string, error: unknown): never => {
    throw new DestinationError(areaUrl, action, error);
  };
  return {
    url: areaUrl,
    async create(name, body) {
      await publishFile(areaUrl, inside(records, name), name, body, { ifAbsent: true });
    },
    async save(name, body) {
      try {
        await mkdir(records, { recursive: true });
        const tmp = join(records, `.${name}.${randomBytes(6).toString('hex')}.tmp`);
        await writeDurably(tmp, [body], undefined);
        await rename(tmp, inside(records, name));
      } catch (error) {
        fail(`saving ${name} in`, error);
      }
    },
    async read(name) {
      try {
        return new Uint8Array(await readFile(inside(records, name)));
      } catch (error) {
        if (isCode(error, 'ENOENT')) return undefined;
        return fail(`reading ${name} from`, error);
      }
    },
    async list(prefix) {
      try {
        return (await readdir(records)).filter((n) => n.startsWith(prefix) && !n.startsWith('.') && !n.includes('.sluice-publish-')).sort();
      } catch (error) {
        if (isCode(error, 'ENOENT')) return [];
        return fail('listing the records of', error);
      }
    },
    async write(name, body, options: WriteOptions = {}) {
      const path = inside(data, name);
      const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
      let bytes = 0;
      try {
        await mkdir(dirname(path), { recursive: true });
        bytes = await writeDurably(tmp, body, options.signal);
        await rename(tmp, path);
      } catch (error) {
        await rm(tmp, { force: true });
        if (options.signal?.aborted) throw options.signal.reason;
        if (error instanceof DestinationError) throw error;
        fail(`writing ${name} to`, error);
      }
      return { bytes };
    },
    async size(name) {
      return stat(inside(data, name)).then(
        (s) => s.size,
        () => undefined,
      );
    },
    async begin(options, files) {
      const tx = await begin(options);
      try {
        // The committer's staging directory gets links to the parts, as if it had written them.
        const staging = stagingOf(options.attemptId);
        for (const name of files) {
          const to = inside(staging, name);
          await mkdir(dirname(to), { recursive: true });
          await link(inside(data, name), to);
        }
      } catch (error) {
        await tx.abort(error);
        fail('gathering the parts of the shards into', error);
      }
      return tx;
    },
    async remove() {
      await rm(root, { recursive: true, force: true }).catch((error: unknown) => fail('removing', error));
    },
  };
}
