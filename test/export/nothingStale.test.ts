import { mkdir, mkdtemp, readdir, readlink, rm, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEASE_PREFIX, LEASE_TTL_MS, manifestCommit, openExport, type OutputConfig, writeExport } from '../../src/export/index.ts';
import { builtins } from '../../connectors/index.ts';
import type { ObjectStore, Registry } from '../../src/kit/index.ts';
import { committedExport } from '../../src/jobs/output/committedOutput.ts';
import { listFiles } from '../connectors/destinations.ts';
import { numbered, numberedSchema, resolved } from '../connectors/fixtures.ts';
import { startAzurite, type LocalAzure } from '../helpers/azurite.ts';
import { startLocalGcs, type LocalGcs } from '../helpers/gcs.ts';
import { startLocalS3, type LocalS3 } from '../helpers/s3.ts';

let s3: LocalS3;
let azure: LocalAzure;
let gcs: LocalGcs;
const dirs: string[] = [];
beforeAll(async () => {
  [s3, azure, gcs] = await Promise.all([startLocalS3(), startAzurite(), startLocalGcs()]);
  await Promise.all([s3.createBucket('stale'), azure.createContainer('stale'), gcs.createBucket('stale')]);
}, 60_000);
afterAll(async () => {
  expect(gcs?.violations).toEqual([]);
  await Promise.all([s3?.stop(), azure?.stop(), gcs?.stop()]);
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

/** The object stores the commit writes in place, each with its own client to look with. */
const stores = {
  S3: {
    type: 's3',
    output: (prefix: string): OutputConfig => ({ format: 'csv', path: `s3://stale/${prefix}`, max_rows_per_file: 10, s3: { endpoint: s3.endpoint, region: s3.region, force_path_style: true } }),
    list: (prefix: string) => s3.list('stale', prefix),
    get: (name: string) => s3.get('stale', name),
  },
  Azure: {
    type: 'azure',
    output: (prefix: string): OutputConfig => ({ format: 'csv', path: `azure://stale/${prefix}`, max_rows_per_file: 10, azure: azure.options }),
    list: (prefix: string) => azure.list('stale', prefix),
    get: (name: string) => azure.get('stale', name),
  },
  GCS: {
    type: 'gcs',
    output: (prefix: string): OutputConfig => ({ format: 'csv', path: `gs://stale/${prefix}`, max_rows_per_file: 10, gcs: gcs.options }),
    list: (prefix: string) => gcs.list('stale', prefix),
    get: (name: string) => gcs.get('stale', name),
  },
};

/**
 * The store of a process killed before its `killAt`-th change (put or delete): that call and
 * every later one never return, as if the process were gone; nothing cleans up after it.
 */
function killedStore(store: ObjectStore, killAt: number): { store: ObjectStore; killed: () => boolean } {
  let changes = 0;
  let dead = false;
  const never = new Promise<never>(() => undefined);
  const gate = <T>(change: boolean, call: () => Promise<T>): Promise<T> => {
    if (dead) return never;
    if (change && changes++ === killAt) {
      dead = true;
      return never;
    }
    return call();
  };
  return {
    killed: () => dead,
    store: {
      url: store.url,
      put: (name, body, o) => gate(true, () => store.put(name, body, o)),
      delete: (names) => gate(true, () => store.delete(names)),
      get: (name, signal) => gate(false, () => store.get(name, signal)),
      head: (name, signal) => gate(false, () => store.head(name, signal)),
      list: (prefix, signal) => gate(false, () => store.list(prefix, signal)),
      close: () => store.close(),
    },
  };
}

/** The built-in sinks, with the store of sink `type` wrapped. */
function registryWith(type: string, wrap: (store: ObjectStore) => ObjectStore): Registry {
  const sinks = builtins.sinks.map((sink): Registry['sinks'][number] => (sink.type !== type ? sink : { ...sink, create: (config: never) => wrap(sink.create(config) as ObjectStore) }));
  return { ...builtins, sinks } as Registry;
}

/** The killed process is gone: its leases now name a process that does not run (as a real kill leaves them). */
async function buryLeases(output: OutputConfig): Promise<void> {
  const { sink, sinkConfig } = resolved(output);
  const store = sink.create(sinkConfig as never) as ObjectStore;
  for (const name of await store.list(LEASE_PREFIX)) {
    const body = JSON.parse(new TextDecoder().decode((await store.get(name))!.body)) as object;
    await store.put(name, new TextEncoder().encode(JSON.stringify({ ...body, pid: 2 ** 31 - 1 })));
  }
  await store.close();
}

const fingerprint = 'same-layout';

/** One export of `executionId` as a job run does it: skip it when committed (tidying up), else write it, resumable. */
async function exportOnce(config: OutputConfig, executionId: string, registry: Registry): Promise<'skipped' | 'written'> {
  const signal = new AbortController().signal;
  const output = resolved(config, registry);
  if (await committedExport(output, executionId, 30, fingerprint, signal, manifestCommit)) return 'skipped';
  const opened = await openExport(output, { executionId }, { resume: { attemptId: `r-${executionId}` } });
  const batches = numbered(30 - opened.startRow, 5);
  await opened.write({ schema: numberedSchema, batches, meta: { executionId, totalRowCount: 30, fingerprint, pageSize: 5 } });
  return 'written';
}

describe.each(Object.keys(stores) as (keyof typeof stores)[])('nothing stale after a commit on %s', (kind) => {
  const place = stores[kind];
  const listed = async (prefix: string): Promise<string[]> => (await place.list(`${prefix}/`)).map((k) => k.slice(prefix.length + 1));
  const manifestAt = async (prefix: string) => JSON.parse(new TextDecoder().decode(await place.get(`${prefix}/_manifest.json`))) as { execution_id: string; files: { path: string }[] };

  // The re-run exports the same execution (resumed, or found committed) or another one (a fresh run).
  it.each(['new', 'newer'])('killed before each change of a run, the next successful run (of execution %s) leaves exactly the manifest files and the markers', async (rerun) => {
    const plain = registryWith(place.type, (store) => store);
    const outcomes: string[] = [];
    for (let killAt = 0; ; killAt++) {
      const prefix = `${rerun}-k${killAt}`;
      const output = place.output(prefix);
      // A committed output of an earlier execution, then a run of a new one killed at step `killAt`.
      await exportOnce(output, 'old', plain);
      let handle: { killed: () => boolean } | undefined;
      const killed = registryWith(place.type, (store) => {
        const k = killedStore(store, killAt);
        handle = k;
        return k.store;
      });
      const run = exportOnce(output, 'new', killed);
      // Settles only when the run got past its last change; a killed run never settles.
      const finished = await Promise.race([run.then(() => true), new Promise<boolean>((resolve) => {
        const poll = setInterval(() => {
          if (handle?.killed()) {
            clearInterval(poll);
            resolve(false);
          }
        }, 5);
        void run.finally(() => clearInterval(poll));
      })]);
      if (finished) break; // no change left to be killed before
      await buryLeases(output);
      // The successful re-run of the same export, same layout.
      outcomes.push(await exportOnce(output, rerun, plain));
      const manifest = await manifestAt(prefix);
      expect(manifest.execution_id).toBe(rerun);
      expect(await listed(prefix)).toEqual(['_SUCCESS', '_manifest.json', ...manifest.files.map((f) => f.path)].sort());
    }
    // Kills before and after the commit point were both exercised: the re-run wrote, or skipped and tidied.
    expect(outcomes).toContain('written');
    if (rerun === 'new') expect(outcomes).toContain('skipped');
    expect(outcomes.length).toBeGreaterThan(3);
  });

  it("a committer's own sweep removes nothing of a commit that replaced its output before the sweep looked", async () => {
    const output = place.output('overtaken');
    const plain = registryWith(place.type, (store) => store);
    const exportOf = (executionId: string, registry: Registry) =>
      writeExport({ schema: numberedSchema, batches: numbered(30, 10), meta: { executionId, totalRowCount: 30 } }, resolved(output, registry));
    // Run a publishes, then, as its sweep lists the prefix, run b commits over it (and is gone).
    let published = false;
    const overtaken = registryWith(place.type, (store) => ({
      ...store,
      async put(name, body, options) {
        const done = await store.put(name, body, options);
        if (name === '_manifest.json') published = true;
        return done;
      },
      async list(prefix, signal) {
        if (published && prefix === '') {
          published = false;
          await exportOf('b', plain);
        }
        return store.list(prefix, signal);
      },
    }));
    await exportOf('a', overtaken);
    const manifest = await manifestAt('overtaken');
    expect(manifest.execution_id).toBe('b');
    expect(await listed('overtaken')).toEqual(['_SUCCESS', '_manifest.json', ...manifest.files.map((f) => f.path)].sort());
  });
});

describe('nothing stale after a commit on a local disk', () => {
  it('local: no commit folder of a dead writer survives the next successful run, whether it writes or finds the output committed', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'sluice-stale-'));
    dirs.push(parent);
    const path = join(parent, 'out');
    const output = { format: 'csv', path, max_rows_per_file: 10 };
    await exportOnce(output, 'new', builtins);
    const area = join(parent, '.out.sluice');
    const current = await readlink(path);
    // What killed runs leave: a commit folder with no lease, one whose lease names a process that is
    // gone, and a journal of a dead attempt.
    await leftBehind(area, 'rkilled', undefined);
    await leftBehind(area, 'rgone', 2 ** 31 - 1);
    await writeFile(join(area, '.sluice-journal-rgone.json'), '{}');
    expect(await exportOnce(output, 'new', builtins)).toBe('skipped');
    expect(await readdir(parent)).toEqual(['.out.sluice', 'out']);
    expect((await listFiles(area)).filter((n) => !n.startsWith(`${current.slice('.out.sluice/'.length)}/`))).toEqual([]);
    expect(await listFiles(path)).toEqual(['_SUCCESS', '_manifest.json', 'part-00000-new.csv', 'part-00001-new.csv', 'part-00002-new.csv']);

    // And when the next run writes (another execution): nothing but the new output and the one it replaced.
    await leftBehind(area, 'rkilled', undefined);
    await writeExport({ schema: numberedSchema, batches: numbered(30, 5), meta: { executionId: 'newer', totalRowCount: 30 } }, resolved(output));
    const folders = [...new Set((await listFiles(area)).filter((n) => n.startsWith('v/')).map((n) => n.split('/').slice(0, 2).join('/')))].sort();
    expect(folders).toEqual([current.slice('.out.sluice/'.length), (await readlink(path)).slice('.out.sluice/'.length)].sort());
  });

  it("local: a commit folder whose writer's lease is alive stays, until the lease expires", async () => {
    const parent = await mkdtemp(join(tmpdir(), 'sluice-stale-'));
    dirs.push(parent);
    const path = join(parent, 'out');
    const output = { format: 'csv', path, max_rows_per_file: 10 };
    await exportOnce(output, 'new', builtins);
    const area = join(parent, '.out.sluice');
    // A writer running in another process of this host (the test runner's parent stands in for it).
    await leftBehind(area, 'rlive', process.ppid);
    expect(await exportOnce(output, 'new', builtins)).toBe('skipped');
    expect(await listFiles(join(area, 'v', 'rlive'))).toEqual(['part-00000-x.csv']);
    // Not renewed for longer than a lease lives: its writer is taken for dead, and the folder goes.
    const old = new Date(Date.now() - LEASE_TTL_MS - 60_000);
    await utimes(join(area, `${LEASE_PREFIX}rlive`), old, old);
    expect(await exportOnce(output, 'new', builtins)).toBe('skipped');
    expect(await listFiles(join(area, 'v', 'rlive'))).toEqual([]);
  });
});

/** A commit folder `id` in the private area, with a lease naming process `pid` (none when undefined). */
async function leftBehind(area: string, id: string, pid: number | undefined): Promise<void> {
  await mkdir(join(area, 'v', id), { recursive: true });
  await writeFile(join(area, 'v', id, 'part-00000-x.csv'), 'id\n1\n');
  if (pid !== undefined) await writeFile(join(area, `${LEASE_PREFIX}${id}`), JSON.stringify({ host: hostname(), pid, token: 'theirs' }));
}
