import { createHash } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.ts';
import { startLocalS3, type LocalS3 } from '../helpers/s3.ts';
import { startAzurite, type LocalAzure } from '../helpers/azurite.ts';
import { startLocalGcs, type LocalGcs } from '../helpers/gcs.ts';
import { logLines, sluice, startSluice, type Running } from '../cli/sluiceProcess.ts';
import { duck } from './duck.ts';
import { journalsLeft, localJournal, otherCommits } from '../helpers/localOutput.ts';

let svc: TestService;
let s3: LocalS3;
let azure: LocalAzure;
let gcs: LocalGcs;
let dir: string;
let env: Record<string, string>;
const BUCKET = 'resume';

beforeAll(async () => {
  // Small pages and some latency so that the export takes long enough to be killed halfway.
  // The latency also counts requests: every request the service answers is delayed once.
  svc = await startTestService({ sampleRows: 20_000, limits: { page_rows: 500 }, faults: { latency_ms: 40 } });
  [s3, azure, gcs] = await Promise.all([startLocalS3(), startAzurite(), startLocalGcs()]);
  await Promise.all([s3.createBucket(BUCKET), azure.createContainer(BUCKET), gcs.createBucket(BUCKET)]);
  dir = await mkdtemp(join(tmpdir(), 'sluice-resume-'));
  // Azure's key from the environment, as a user would give it; GCS's endpoint as Google's clients take an emulator's.
  env = { SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin, S3_ENDPOINT: s3.endpoint, AZURE_ENDPOINT: azure.endpoint, AZURE_STORAGE_KEY: azure.key, STORAGE_EMULATOR_HOST: gcs.endpoint };
}, 60_000);
afterAll(async () => {
  expect(gcs?.violations).toEqual([]);
  await Promise.all([s3?.stop(), azure?.stop(), gcs?.stop()]);
  await svc?.close();
  await rm(dir, { recursive: true, force: true });
});

const jobYaml = (name: string, outputs: string) => `connection:
  base_url: \${SERVICE_BASE_URL}
state_dir: ${join(dir, 'state')}
jobs:
  - name: ${name}
    source: { sql: "select * from sample.events order by id" }
    concurrency: 1
    outputs:
${outputs}`;

const parquetOut = (path: string, extra = '') => `      - format: parquet
        path: ${path}
        max_rows_per_file: 2000
${extra}`;
const s3Settings = '        s3: { endpoint: "${S3_ENDPOINT}", region: us-east-1, force_path_style: true }\n';

interface JournalPart {
  path: string;
  first_row: number;
  rows: number;
}

/** Every file of a directory with its sha256, manifest aside (it carries the time it was written). */
async function snapshot(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(root, { recursive: true, encoding: 'utf8' }).sort()) {
    const path = join(root, name);
    if (name === '_manifest.json' || !statSync(path).isFile()) continue;
    out[name] = createHash('sha256').update(await readFile(path)).digest('hex');
  }
  return out;
}

/** Commit folders of runs in progress or left behind, and journals, relative to the output's parent. */
function stagingDirs(target: string): string[] {
  const area = `.${basename(target)}.sluice`;
  return [...otherCommits(target).map((f) => `${area}/v/${f}`), ...journalsLeft(target).map((j) => `${area}/${j}`)];
}

/** The object stores a resumed export writes in place, each with its settings block and its own client to look with. */
const stores = {
  S3: {
    scheme: 's3',
    settings: s3Settings,
    list: (prefix: string) => s3.list(BUCKET, prefix),
    get: (key: string) => s3.get(BUCKET, key),
    put: async (key: string, body: string) => {
      await s3.client.send(new (await import('@aws-sdk/client-s3')).PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
    },
    download: (prefix: string, to: string) => s3.download(BUCKET, prefix, to),
  },
  Azure: {
    scheme: 'azure',
    settings: '        azure: { account: devstoreaccount1, endpoint: "${AZURE_ENDPOINT}" }\n',
    list: (prefix: string) => azure.list(BUCKET, prefix),
    get: (key: string) => azure.get(BUCKET, key),
    put: async (key: string, body: string) => {
      const { BlobServiceClient, StorageSharedKeyCredential } = await import('@azure/storage-blob');
      const service = new BlobServiceClient(azure.endpoint, new StorageSharedKeyCredential(azure.account, azure.key));
      await service.getContainerClient(BUCKET).getBlockBlobClient(key).upload(body, body.length);
    },
    download: (prefix: string, to: string) => azure.download(BUCKET, prefix, to),
  },
  GCS: {
    scheme: 'gs',
    settings: '',
    list: (prefix: string) => gcs.list(BUCKET, prefix),
    get: (key: string) => gcs.get(BUCKET, key),
    put: (key: string, body: string) => gcs.put(BUCKET, key, body),
    download: (prefix: string, to: string) => gcs.download(BUCKET, prefix, to),
  },
};
type Store = (typeof stores)[keyof typeof stores];

async function storeJournal(store: Store, prefix: string): Promise<JournalPart[]> {
  const key = (await store.list(`${prefix}/`)).find((k) => k.includes('.sluice-journal-'));
  if (key === undefined) return [];
  return (JSON.parse(new TextDecoder().decode(await store.get(key))) as { parts: JournalPart[] }).parts;
}

/** Starts `sluice run`, waits until `journal()` lists at least two parts, then kills it with SIGKILL. */
async function killMidExport(file: string, journal: () => Promise<JournalPart[]>): Promise<{ executionId: string; journaled: JournalPart[] }> {
  const parts = 2;
  const first: Running = startSluice(['run', file], { env });
  const [, executionId] = (await first.waitFor(/"execution started".*"execution_id":"(01[0-9A-Z]{24})"/)) as unknown as [string, string];
  const deadline = Date.now() + 30_000;
  while ((await journal()).length < parts && first.child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  first.child.kill('SIGKILL');
  const killed = await first.done;
  expect(killed.signal, killed.stderr).toBe('SIGKILL');
  const journaled = await journal();
  expect(journaled.length).toBeGreaterThanOrEqual(parts);
  // The middle of the export: some parts done, not all of them.
  expect(journaled.length).toBeLessThan(10);
  return { executionId, journaled };
}

/** Runs `sluice run --json` and counts the requests the service answered meanwhile. */
async function runCounted(args: string[]): Promise<{ summary: Record<string, unknown>; requests: number; stderr: string }> {
  const before = svc.faultCounts.delayed;
  const result = await sluice([...args, '--json'], { env });
  expect(result.code, result.stderr).toBe(0);
  return { summary: JSON.parse(result.stdout) as Record<string, unknown>, requests: svc.faultCounts.delayed - before, stderr: result.stderr };
}

describe('resume after a kill', () => {
  it('keeps the parts written before the kill, fetches only the rest, and the output is identical to an uninterrupted run', async () => {
    const out = join(dir, 'out', 'events');
    const file = join(dir, 'jobs.yaml');
    await writeFile(file, jobYaml('resumable', parquetOut(out)));

    const { executionId, journaled } = await killMidExport(file, () => localJournal<JournalPart>(out));
    expect(existsSync(join(out, '_SUCCESS'))).toBe(false);
    expect(JSON.parse(await readFile(join(dir, 'state', 'resumable.json'), 'utf8'))).toMatchObject({ execution_id: executionId });
    expect(journaled.map((p) => p.first_row)).toEqual(journaled.map((_, i) => i * 2000));
    const [ours] = stagingDirs(out);
    const kept = Object.fromEntries(journaled.map((p) => [p.path, statSync(join(dirname(out), ours!, p.path))]));
    // A commit folder of another attempt whose writer is gone (another execution, killed long ago).
    const stale = join(dirname(out), '.events.sluice', 'v', '1abc-deadbeef');
    await mkdir(stale, { recursive: true });
    await writeFile(join(stale, 'part-00000-01OTHER.parquet'), 'half a file');
    const longAgo = new Date(Date.now() - 3_600_000);
    await utimes(stale, longAgo, longAgo);

    const second = await runCounted(['run', file]);
    // No new execution; the killed run recorded nothing, so this run's history holds the execution's credits.
    expect(second.summary).toMatchObject({ execution_id: executionId, resumed: true, credits: 10, rows: 20_000, files: 10 });
    expect(logLines(second.stderr).some((l) => l.msg === 'resuming the execution of an interrupted run' && l.execution_id === executionId)).toBe(true);
    expect(existsSync(join(dir, 'state', 'resumable.json'))).toBe(false);
    // The parts of the killed run were kept as they were: same inode, same modification time.
    for (const [path, before] of Object.entries(kept)) {
      const after = statSync(join(out, path));
      expect([after.ino, after.mtimeMs], path).toEqual([before.ino, before.mtimeMs]);
    }
    expect(stagingDirs(out)).toEqual([]);

    // The reference: the same execution exported without interruption, into another directory.
    const refOut = join(dir, 'ref', 'events');
    const refFile = join(dir, 'ref.yaml');
    await writeFile(refFile, jobYaml('reference', parquetOut(refOut)));
    const ref = await runCounted(['run', refFile, '--execution', executionId]);
    // 40 pages of 500 rows; the resumed run skipped the pages of the kept parts (4 per part).
    expect(ref.requests - second.requests).toBeGreaterThanOrEqual(journaled.length * 4 - 1);

    const resumed = await snapshot(out);
    expect(Object.keys(resumed)).toHaveLength(11); // 10 parts and _SUCCESS
    expect(resumed).toEqual(await snapshot(refOut));
    const manifest = JSON.parse(await readFile(join(out, '_manifest.json'), 'utf8')) as { files: unknown[]; total_rows: number };
    const refManifest = JSON.parse(await readFile(join(refOut, '_manifest.json'), 'utf8')) as { files: unknown[]; total_rows: number };
    expect(manifest.files).toEqual(refManifest.files);
    expect(manifest.total_rows).toBe(20_000);
    const [check] = await duck(`select count(*)::int as n, count(distinct id)::int as ids, min(id)::int as lo, max(id)::int as hi from read_parquet('${out}/*.parquet')`);
    expect(check).toEqual({ n: 20_000, ids: 20_000, lo: 0, hi: 19_999 });
  });

  it.each(Object.keys(stores) as (keyof typeof stores)[])('on %s: keeps the uploaded parts, fetches only the rest, removes what abandoned attempts left, identical output', async (kind) => {
    const store = stores[kind];
    const prefix = 'events';
    const file = join(dir, `${store.scheme}.yaml`);
    await writeFile(file, jobYaml(`to-${store.scheme}`, parquetOut(`${store.scheme}://${BUCKET}/${prefix}`, store.settings)));
    const { executionId, journaled } = await killMidExport(file, () => storeJournal(store, prefix));
    const keys = await store.list(`${prefix}/`);
    for (const p of journaled) expect(keys).toContain(`${prefix}/${p.path}`);
    // What an attempt abandoned long ago left (a part no manifest lists), and an object sluice did not write.
    await store.put(`${prefix}/part-00042-01ABANDONED.parquet`, 'x');
    await store.put(`${prefix}/README.txt`, 'keep');

    const second = await runCounted(['run', file]);
    expect(second.summary).toMatchObject({ execution_id: executionId, resumed: true, rows: 20_000, files: 10 });

    const refFile = join(dir, `${store.scheme}-ref.yaml`);
    await writeFile(refFile, jobYaml(`to-${store.scheme}-ref`, parquetOut(`${store.scheme}://${BUCKET}/ref`, store.settings)));
    const ref = await runCounted(['run', refFile, '--execution', executionId]);
    expect(ref.requests - second.requests).toBeGreaterThanOrEqual(journaled.length * 4 - 1);

    const after = await store.list(`${prefix}/`);
    expect(after.filter((k) => k.includes('ABANDONED') || k.includes('.sluice-journal'))).toEqual([]);
    expect(after).toContain(`${prefix}/README.txt`);
    const got = join(dir, `${store.scheme}-got`);
    const want = join(dir, `${store.scheme}-want`);
    await store.download(prefix, got);
    await store.download('ref', want);
    await rm(join(got, 'README.txt'));
    const resumed = await snapshot(got);
    expect(Object.keys(resumed)).toHaveLength(11);
    expect(resumed).toEqual(await snapshot(want));
  });

  it('outputs rolled by bytes or partitioned are rewritten from the start, and are identical too', async () => {
    const base = join(dir, 'mixed');
    const outputs = (root: string) =>
      `${parquetOut(join(root, 'rows'))}      - { format: csv, path: ${join(root, 'bytes')}, max_bytes_per_file: 65536 }
      - { format: ndjson, path: ${join(root, 'parts')}, partition_by: [flag] }
`;
    const file = join(dir, 'mixed.yaml');
    await writeFile(file, jobYaml('mixed', outputs(base)));
    const { executionId, journaled } = await killMidExport(file, () => localJournal<JournalPart>(join(base, 'rows')));
    // Only the row-rolled output journals its parts.
    expect(await localJournal<JournalPart>(join(base, 'bytes'))).toEqual([]);
    expect(stagingDirs(join(base, 'bytes'))).toHaveLength(1);
    const kept = statSync(join(base, stagingDirs(join(base, 'rows'))[0]!, journaled[0]!.path));

    const second = await runCounted(['run', file]);
    expect(second.summary).toMatchObject({ execution_id: executionId, resumed: true, rows: 20_000 });
    expect(statSync(join(base, 'rows', journaled[0]!.path)).ino).toBe(kept.ino);

    const refBase = join(dir, 'mixed-ref');
    const refFile = join(dir, 'mixed-ref.yaml');
    await writeFile(refFile, jobYaml('mixed-ref', outputs(refBase)));
    await runCounted(['run', refFile, '--execution', executionId]);
    for (const name of ['rows', 'bytes', 'parts']) {
      const resumed = await snapshot(join(base, name));
      expect(Object.keys(resumed).length, name).toBeGreaterThan(2);
      expect(resumed, name).toEqual(await snapshot(join(refBase, name)));
      expect(stagingDirs(join(base, name)), name).toEqual([]);
    }
  });
});
