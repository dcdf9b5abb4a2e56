import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestCommit, openExport, type OutputConfig, writeExport } from '../../src/export/index.ts';
import { builtins } from '../../connectors/index.ts';
import type { Registry } from '../../src/kit/index.ts';
import { committedExport } from '../../src/jobs/committedOutput.ts';
import { s3Destination } from '../../connectors/sinks/s3/index.ts';
import type { ObjectStore } from '../../connectors/sinks/s3/objectStore.ts';
import { sdkObjectStore } from '../../connectors/sinks/s3/sdkStore.ts';
import { parseS3Url } from '../../connectors/sinks/s3/url.ts';
import { listFiles } from '../connectors/destinations.ts';
import { numbered, numberedSchema, resolved } from '../connectors/fixtures.ts';
import { startLocalS3, type LocalS3 } from '../helpers/s3.ts';

let s3: LocalS3;
const dirs: string[] = [];
beforeAll(async () => {
  s3 = await startLocalS3();
  await s3.createBucket('stale');
});
afterAll(async () => {
  await s3?.stop();
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

/**
 * The S3 store of a process killed before its `killAt`-th change (upload, put or delete): that call
 * and every later one never return, as if the process were gone; nothing cleans up after it.
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
      upload: (key, body, o) => gate(true, () => store.upload(key, body, o)),
      put: (key, body, type, condition) => gate(true, () => store.put(key, body, type, condition)),
      delete: (keys) => gate(true, () => store.delete(keys)),
      get: (key, signal) => gate(false, () => store.get(key, signal)),
      getVersioned: (key, signal) => gate(false, () => store.getVersioned(key, signal)),
      head: (key, signal) => gate(false, () => store.head(key, signal)),
      list: (prefix, signal) => gate(false, () => store.list(prefix, signal)),
      close: () => store.close(),
    },
  };
}

function registryWith(wrap: (store: ObjectStore) => ObjectStore): Registry {
  const sinks = builtins.sinks.map((sink): Registry['sinks'][number] =>
    sink.type !== 's3'
      ? sink
      : {
          ...sink,
          create: (config: { url: string }) => {
            const location = parseS3Url(config.url)!;
            const store = sdkObjectStore({ bucket: location.bucket, client: { endpoint: s3.endpoint, region: s3.region, forcePathStyle: true }, partSize: 5 * 1024 * 1024, queueSize: 1 });
            return s3Destination(location, wrap(store));
          },
        },
  );
  return { ...builtins, sinks } as Registry;
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

async function listed(prefix: string): Promise<string[]> {
  return (await s3.list('stale', `${prefix}/`)).map((k) => k.slice(prefix.length + 1));
}

describe('nothing stale after a commit', () => {
  // The re-run exports the same execution (resumed, or found committed) or another one (a fresh run).
  it.each(['new', 'newer'])('S3: killed before each change of a run, the next successful run (of execution %s) leaves exactly the manifest files and the markers', async (rerun) => {
    const plain = registryWith((store) => store);
    const outcomes: string[] = [];
    for (let killAt = 0; ; killAt++) {
      const prefix = `${rerun}-k${killAt}`;
      const output = { format: 'csv', path: `s3://stale/${prefix}`, max_rows_per_file: 10 };
      // A committed output of an earlier execution, then a run of a new one killed at step `killAt`.
      await exportOnce(output, 'old', plain);
      let handle: { killed: () => boolean } | undefined;
      const killed = registryWith((store) => {
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
      // The successful re-run of the same export, same layout.
      outcomes.push(await exportOnce(output, rerun, plain));
      const manifest = JSON.parse(new TextDecoder().decode(await s3.get('stale', `${prefix}/_manifest.json`))) as { execution_id: string; files: { path: string }[] };
      expect(manifest.execution_id).toBe(rerun);
      expect(await listed(prefix)).toEqual(['_SUCCESS', '_manifest.json', ...manifest.files.map((f) => f.path)].sort());
    }
    // Kills before and after the commit point were both exercised: the re-run wrote, or skipped and tidied.
    expect(outcomes).toContain('written');
    if (rerun === 'new') expect(outcomes).toContain('skipped');
    expect(outcomes.length).toBeGreaterThan(3);
  });

  it('local: no staging or aside directory survives the next successful run, whether it writes or finds the output committed', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'sluice-stale-'));
    dirs.push(parent);
    const path = join(parent, 'out');
    const output = { format: 'csv', path, max_rows_per_file: 10 };
    await exportOnce(output, 'new', builtins);
    // What a run killed right after its commit (before removing the previous output set aside) and a
    // run killed mid-write leave: `.old` beside the output, and a staging directory whose writer is gone.
    const aside = join(parent, '.out.sluice-staging-rdead.old');
    const staging = join(parent, '.out.sluice-staging-rkilled');
    for (const dir of [aside, staging]) {
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, 'part-00000-old.csv'), 'id\n1\n');
    }
    await writeFile(join(staging, '.sluice-owner'), 'no-such-host 1\n');
    expect(await exportOnce(output, 'new', builtins)).toBe('skipped');
    expect(await readdir(parent)).toEqual(['out']);
    expect(await listFiles(path)).toEqual(['_SUCCESS', '_manifest.json', 'part-00000-new.csv', 'part-00001-new.csv', 'part-00002-new.csv']);

    // And when the next run writes (another execution), the same holds.
    await mkdir(aside, { recursive: true });
    await writeExport({ schema: numberedSchema, batches: numbered(30, 5), meta: { executionId: 'newer', totalRowCount: 30 } }, resolved(output));
    expect(await readdir(parent)).toEqual(['out']);
  });

  it("local: a staging directory with no owner file yet is another writer's, until it has not changed for a minute", async () => {
    const parent = await mkdtemp(join(tmpdir(), 'sluice-stale-'));
    dirs.push(parent);
    const path = join(parent, 'out');
    const output = { format: 'csv', path, max_rows_per_file: 10 };
    // Where a writer is between creating its staging directory and writing its owner file (or
    // between removing that file and its commit's rename): another run's sweep leaves it alone.
    const starting = join(parent, '.out.sluice-staging-rstarting');
    await mkdir(starting);
    await writeFile(join(starting, 'part-00000-x.csv'), 'id\n1\n');
    expect(await exportOnce(output, 'new', builtins)).toBe('written');
    expect((await readdir(parent)).sort()).toEqual(['.out.sluice-staging-rstarting', 'out']);
    // A writer killed in between leaves it so: once it has not changed for a minute it goes.
    const old = new Date(Date.now() - 2 * 60_000);
    await utimes(starting, old, old);
    expect(await exportOnce(output, 'new', builtins)).toBe('skipped');
    expect(await readdir(parent)).toEqual(['out']);
  });
});
