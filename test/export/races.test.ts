// Races as tests: two processes committing and two sweeping one output for a bounded time, on disk,
// on S3 (through the precondition gate, which enforces conditional writes as S3 does) and on Azure
// (azurite enforces them itself) and on GCS (the stand-in enforces generation preconditions), while this process reads the output as readers do. Nothing may
// be published with files missing, the output may never be absent once committed, a reader of the
// folder on disk never sees a mix, and a loser fails loudly (PRECONDITION_FAILED) or not at all.
import { spawn } from 'node:child_process';
import { lstat, mkdtemp, readdir, readFile, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { manifestCommit, openDestination, type OutputConfig } from '../../src/export/index.ts';
import { resolved } from '../connectors/fixtures.ts';
import { startAzurite, type LocalAzure } from '../helpers/azurite.ts';
import { startLocalGcs, type LocalGcs } from '../helpers/gcs.ts';
import { startPreconditionGate, type PreconditionGate } from '../helpers/preconditionGate.ts';
import { startLocalS3, type LocalS3 } from '../helpers/s3.ts';

/** How long the racers race. Not a timing assertion: counts are reported, the invariants asserted. */
const RACE_MS = 10_000;

let s3: LocalS3;
let gate: PreconditionGate;
let azure: LocalAzure;
let gcs: LocalGcs;
let dir: string;
beforeAll(async () => {
  [s3, azure, gcs] = await Promise.all([startLocalS3(), startAzurite(), startLocalGcs()]);
  await Promise.all([s3.createBucket('races'), azure.createContainer('races'), gcs.createBucket('races')]);
  gate = await startPreconditionGate(s3.endpoint);
  dir = await mkdtemp(join(tmpdir(), 'sluice-races-'));
}, 60_000);
afterAll(async () => {
  await gate?.stop();
  expect(gcs?.violations).toEqual([]);
  await Promise.all([s3?.stop(), azure?.stop(), gcs?.stop()]);
  await rm(dir, { recursive: true, force: true });
});

interface Counts {
  commits: number;
  lost: number;
  failed: number;
  sweeps: number;
  errors: string[];
}

function racer(role: 'commit' | 'sweep', output: OutputConfig, seed: number): Promise<Counts> {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'raceWorker.ts'), role, JSON.stringify(output), String(RACE_MS), String(seed)], { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      const line = out.trim().split('\n').pop();
      if (code !== 0 || line === undefined) reject(new Error(`${role} racer exited with ${code}: ${err}`));
      else resolve(JSON.parse(line) as Counts);
    });
  });
}

interface Seen {
  samples: number;
  /** A manifest read whose files were not all there (while it was still the committed one). */
  missing: number;
  /** No output at all after the first commit. */
  absent: number;
  /** A listing of the folder that held files of another commit (disk only). */
  mixed: number;
}

/** Reads the committed output as an object-store reader does, until `done`: manifest, then every file it lists. */
async function readObjects(output: OutputConfig, done: () => boolean): Promise<Seen> {
  const seen: Seen = { samples: 0, missing: 0, absent: 0, mixed: 0 };
  const destination = openDestination(resolved(output, builtins));
  const store = destination;
  let committed = false;
  try {
    while (!done()) {
      const before = await store.readVersioned!('_manifest.json');
      seen.samples++;
      if (before === undefined) {
        if (committed) seen.absent++;
        continue;
      }
      committed = true;
      const manifest = JSON.parse(new TextDecoder().decode(before.body)) as { files: { path: string }[] };
      const there = await store.store!.list('');
      const after = await store.readVersioned!('_manifest.json');
      // Replaced meanwhile: the replaced output's files go with its replacement, as they should.
      if (after?.version !== before.version) continue;
      if (manifest.files.some((f) => !there.includes(f.path))) seen.missing++;
    }
  } finally {
    await destination.close();
  }
  return seen;
}

/** Reads a local output as a reader that lists the folder does: the folder the path resolves to, its files against its manifest. */
async function readFolder(path: string, done: () => boolean): Promise<Seen> {
  const seen: Seen = { samples: 0, missing: 0, absent: 0, mixed: 0 };
  let committed = false;
  while (!done()) {
    seen.samples++;
    const found = await lstat(path).catch(() => undefined);
    if (found === undefined) {
      if (committed) seen.absent++;
      continue;
    }
    committed = true;
    const folder = await realpath(path).catch(() => undefined);
    if (folder === undefined) continue;
    // The folder a reader resolved is one commit's, whole; a sweep may remove it only once replaced.
    const [names, manifest] = await Promise.all([readdir(folder).catch(() => undefined), readFile(join(folder, '_manifest.json'), 'utf8').catch(() => undefined)]);
    if (names === undefined || manifest === undefined) {
      if ((await realpath(path).catch(() => undefined)) === folder) seen.missing++;
      continue;
    }
    const listed = (JSON.parse(manifest) as { files: { path: string }[] }).files.map((f) => f.path);
    const data = names.filter((n) => !n.startsWith('_'));
    if (listed.some((f) => !names.includes(f))) seen.missing++;
    if (data.some((n) => !listed.includes(n))) seen.mixed++;
  }
  return seen;
}

const places: Record<string, () => OutputConfig> = {
  disk: () => ({ format: 'csv', path: join(dir, 'out'), max_rows_per_file: 10 }),
  's3 (through the precondition gate)': () => ({ format: 'csv', path: 's3://races/out', max_rows_per_file: 10, s3: { endpoint: gate.endpoint, region: s3.region, force_path_style: true } }),
  azure: () => ({ format: 'csv', path: 'azure://races/out', max_rows_per_file: 10, azure: azure.options }),
  gcs: () => ({ format: 'csv', path: 'gs://races/out', max_rows_per_file: 10, gcs: gcs.options }),
};

describe.each(Object.keys(places))('two committers and two sweepers racing on %s', (place) => {
  it('publish nothing with files missing, never leave the output absent, and losers fail loudly', { timeout: 120_000 }, async () => {
    const output = places[place]!();
    let finished = false;
    const racing = Promise.all([racer('commit', output, 1), racer('commit', output, 2), racer('sweep', output, 3), racer('sweep', output, 4)]).finally(() => (finished = true));
    const reading = place === 'disk' ? readFolder(output.path, () => finished) : readObjects(output, () => finished);
    const [[a, b, c, d], seen] = await Promise.all([racing, reading]);
    const committers = [a, b];
    const counts = {
      commits: a.commits + b.commits,
      lost: a.lost + b.lost,
      failed: a.failed + b.failed + c.failed + d.failed,
      sweeps: c.sweeps + d.sweeps,
      ...seen,
    };
    // The figures of the closing note come from here.
    console.log(`races on ${place}: ${JSON.stringify(counts)}`);
    expect([...a.errors, ...b.errors, ...c.errors, ...d.errors]).toEqual([]);
    expect(counts.commits).toBeGreaterThan(0);
    expect(committers.every((r) => r.commits + r.lost > 0)).toBe(true);
    expect(seen.samples).toBeGreaterThan(0);
    expect({ missing: seen.missing, absent: seen.absent, mixed: seen.mixed }).toEqual({ missing: 0, absent: 0, mixed: 0 });

    // Once nobody writes, a sweep leaves exactly the committed output.
    const destination = openDestination(resolved(output, builtins));
    try {
      await destination.sweep!(async () => (await manifestCommit.read(destination))?.owns);
      const commit = (await manifestCommit.read(destination))!;
      const objects = (await destination.store!.list('')).filter((n) => !n.startsWith('.sluice-shards/'));
      expect(objects.sort()).toEqual([...commit.owns].sort());
      // On disk no commit folder is left empty (the area's listing names empty folders as `name/`).
      expect(((await destination.store!.link?.area.list('')) ?? []).filter((n) => n.endsWith('/'))).toEqual([]);
    } finally {
      await destination.close();
    }
  });
});
