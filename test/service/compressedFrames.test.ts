// Stored compressed frames: a page on the default page grid is compressed once, kept as a file, and
// served from it in zstd and gzip (head and tail compressed per request around it); every answer
// decodes (with zlib, independently of the client) to the very bytes of the uncompressed answer,
// gzip with a decoder that reads one member only (as aiohttp and Python's zlib do).
// Results are served the same whoever ran the SQL: these services do not wall teams apart
// (walledTeams: false saves each start the team instances; tenancy is tested in walls.http.test.ts).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { zstdDecompressSync } from 'node:zlib';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARROW_STREAM_MEDIA_TYPE } from '../../src/protocol/index.ts';
import { gunzipOneMember } from '../helpers/gunzipOneMember.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { runSql } from './api.ts';

const PAGE = 1000;
const ROWS = 3500;
const DECODE = { zstd: zstdDecompressSync, gzip: gunzipOneMember } as const;
const FORMATS = {
  json: { path: 'results', headers: {} },
  csv: { path: 'results/csv', headers: {} },
  arrow: { path: 'results', headers: { accept: ARROW_STREAM_MEDIA_TYPE } },
} as const;
type Format = keyof typeof FORMATS;

let svc: TestService;
let id: string;
beforeAll(async () => {
  svc = await startTestService({ walledTeams: false, sampleRows: ROWS, encodeMinBytes: 0, limits: { page_rows: PAGE } });
  id = await runSql(svc, 'SELECT * FROM sample.events ORDER BY id');
  await svc.whenEncoded(id);
});
afterAll(() => svc?.close());

async function raw(s: TestService, path: string, headers: Record<string, string>) {
  const res = await request(`${s.url}${path}`, { headers: { 'x-service-api-key': s.keys.demo.read, ...headers } });
  const chunks: Buffer[] = [];
  for await (const c of res.body) chunks.push(c as Buffer);
  return { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) };
}

const framesDir = (s: TestService, result: string) => join(s.dataDir, 'engine', 'results', `${result}.enc`, 'frames');
const frames = async (s: TestService, result: string): Promise<string[]> => (existsSync(framesDir(s, result)) ? (await readdir(framesDir(s, result))).sort() : []);

/** The page plain and in `coding`; asserts the decoded body is the plain one, byte for byte, and the paging headers are the same. */
async function compare(s: TestService, result: string, format: Format, query: string, coding: 'zstd' | 'gzip' | 'br') {
  const { path, headers } = FORMATS[format];
  const url = `/v1/execution/${result}/${path}?${query}`;
  const plain = await raw(s, url, headers);
  const packed = await raw(s, url, { ...headers, 'accept-encoding': coding });
  expect(plain.status).toBe(200);
  expect(packed.status).toBe(200);
  expect(packed.headers['content-encoding']).toBe(coding);
  const decoded = coding === 'br' ? (await import('node:zlib')).brotliDecompressSync(packed.body) : DECODE[coding](packed.body);
  expect(decoded.equals(plain.body), `${format} ${query} ${coding}`).toBe(true);
  for (const h of ['x-service-next-offset', 'x-service-next-uri', 'x-service-metadata', 'content-type']) expect(packed.headers[h]).toEqual(plain.headers[h]);
  // Sent from a stored frame: its length is known up front; compressed per request: chunked.
  return { stored: packed.headers['content-length'] !== undefined, packed };
}

describe('stored compressed frames', () => {
  it.each(['zstd', 'gzip'] as const)('serve pages on the page grid (JSON, CSV, Arrow; the last page short) from frames stored once, in %s', async (coding) => {
    for (const format of Object.keys(FORMATS) as Format[]) {
      for (const offset of [0, PAGE, 3 * PAGE]) {
        const first = await compare(svc, id, format, `offset=${offset}`, coding);
        expect(first.stored, `${format} ${offset}`).toBe(true);
        expect(Number(first.packed.headers['content-length'])).toBe(first.packed.body.length);
        const file = (await frames(svc, id)).filter((f) => f.startsWith(`rows.${format}.`) && f.endsWith(`.${coding === 'gzip' ? 'deflate' : coding}`));
        const before = await Promise.all(file.map((f) => stat(join(framesDir(svc, id), f))));
        const again = await compare(svc, id, format, `offset=${offset}`, coding);
        expect(again.stored).toBe(true);
        expect(again.packed.body.equals(first.packed.body)).toBe(true);
        // Read again, not written again.
        const after = await Promise.all(file.map((f) => stat(join(framesDir(svc, id), f))));
        expect(after.map((x) => [x.ino, x.mtimeMs])).toEqual(before.map((x) => [x.ino, x.mtimeMs]));
      }
    }
    const stored = (await frames(svc, id)).filter((f) => f.endsWith(`.${coding === 'gzip' ? 'deflate' : coding}`));
    expect(stored).toHaveLength(9);
    // Only whole frames: nothing left under a scratch name.
    expect((await readdir(join(svc.dataDir, 'engine', 'results'))).filter((n) => n.startsWith('scratch~'))).toEqual([]);
  });

  it.each(['zstd', 'gzip'] as const)('compress pages off the grid per request, storing nothing (%s)', async (coding) => {
    const before = await frames(svc, id);
    for (const format of Object.keys(FORMATS) as Format[]) {
      for (const query of ['offset=500&limit=1000', 'offset=0&limit=100', 'offset=3400', `offset=${PAGE}&limit=999`]) {
        const r = await compare(svc, id, format, query, coding);
        expect(r.stored, `${format} ${query}`).toBe(false);
      }
    }
    expect(await frames(svc, id)).toEqual(before);
  });

  it('compresses brotli per request (its streams do not concatenate), and filtered pages too', async () => {
    for (const format of Object.keys(FORMATS) as Format[]) {
      expect((await compare(svc, id, format, 'offset=0', 'br')).stored).toBe(false);
      expect((await compare(svc, id, format, `offset=0&filters=${encodeURIComponent('id >= 3')}`, 'zstd')).stored).toBe(false);
    }
    expect((await frames(svc, id)).filter((f) => f.endsWith('.br'))).toEqual([]);
  });

  it('write one frame for concurrent first readers of a page, each answer whole', async () => {
    const other = await runSql(svc, 'SELECT * FROM sample.events ORDER BY id DESC');
    await svc.whenEncoded(other);
    const url = `/v1/execution/${other}/results?offset=${2 * PAGE}`;
    const plain = await raw(svc, url, {});
    const answers = await Promise.all(Array.from({ length: 4 }, () => raw(svc, url, { 'accept-encoding': 'zstd' })));
    for (const a of answers) expect(zstdDecompressSync(a.body).equals(plain.body)).toBe(true);
    expect(await frames(svc, other)).toHaveLength(1);
  });

  it('fall back to compressing per request when a frame cannot be stored, leaving nothing behind', async () => {
    const other = await runSql(svc, 'SELECT * FROM sample.events ORDER BY id LIMIT 2500');
    await svc.whenEncoded(other);
    // A file where the frames directory goes: every frame's rename into it fails.
    await mkdir(join(framesDir(svc, other), '..'), { recursive: true });
    await writeFile(framesDir(svc, other), 'not a directory');
    for (const coding of ['zstd', 'gzip'] as const) {
      for (const format of Object.keys(FORMATS) as Format[]) expect((await compare(svc, other, format, 'offset=0', coding)).stored).toBe(false);
    }
    expect((await readdir(join(svc.dataDir, 'engine', 'results'))).filter((n) => n.startsWith('scratch~'))).toEqual([]);
  });

  it("answer a next_uri on the service's own origin around the same stored frame, whatever Host each request names", async () => {
    const url = `/v1/execution/${id}/results?offset=0`;
    const a = await raw(svc, url, { 'accept-encoding': 'zstd', host: 'one.example:1' });
    const b = await raw(svc, url, { 'accept-encoding': 'zstd', host: 'two.example:2' });
    for (const answer of [a, b]) expect(JSON.parse(zstdDecompressSync(answer.body).toString()).next_uri.startsWith(`${svc.origin}/api/`)).toBe(true);
  });
});

describe('stored frames across a restart', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('keep the frames stored before, and remove a frame a crash left half-written', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-frames-restart-'));
    dirs.push(dataDir);
    const overrides = { dataDir, sampleRows: ROWS, encodeMinBytes: 0, limits: { page_rows: PAGE } };
    const first = await startTestService({ walledTeams: false, ...overrides });
    let result: string;
    let stored: string[];
    try {
      result = await runSql(first, 'SELECT * FROM sample.events ORDER BY id');
      await first.whenEncoded(result);
      for (const format of Object.keys(FORMATS) as Format[]) expect((await compare(first, result, format, 'offset=0', 'gzip')).stored).toBe(true);
      stored = await frames(first, result);
      expect(stored).toHaveLength(3);
    } finally {
      await first.close();
    }
    // What a SIGKILL during a frame's write leaves: its scratch file (the frame is not yet renamed).
    const leftover = join(dataDir, 'engine', 'results', `scratch~frame-${result}-0123456789abcdef`);
    await writeFile(leftover, 'half a frame');
    const second = await startTestService({ walledTeams: false, ...overrides });
    try {
      expect(existsSync(leftover)).toBe(false);
      expect(await frames(second, result)).toEqual(stored);
      for (const format of Object.keys(FORMATS) as Format[]) expect((await compare(second, result, format, 'offset=0', 'gzip')).stored).toBe(true);
    } finally {
      await second.close();
    }
  });
});

describe('stored frames of full-size pages', () => {
  let big: TestService;
  let result: string;
  beforeAll(async () => {
    // Default page size: a JSON page of several MB, so the stored zstd frame has many blocks.
    big = await startTestService({ walledTeams: false, sampleRows: 40_000, encodeMinBytes: 0 });
    result = await runSql(big, 'SELECT * FROM sample.events ORDER BY id');
    await big.whenEncoded(result);
  });
  afterAll(() => big?.close());

  it.each(['zstd', 'gzip'] as const)('decode byte for byte in %s, the first page and the short last one', async (coding) => {
    const plain = await raw(big, `/v1/execution/${result}/results`, {});
    const pageRows = JSON.parse(plain.body.toString()).result.metadata.row_count as number;
    expect(pageRows).toBeLessThan(40_000);
    for (const format of Object.keys(FORMATS) as Format[]) {
      for (const offset of [0, pageRows]) {
        const r = await compare(big, result, format, `offset=${offset}`, coding);
        expect(r.stored, `${format} ${offset}`).toBe(true);
        // The reference decoder, where installed, reads the spliced frame too (and checks it whole).
        const cli = spawnSync(coding, ['-dc'], { input: r.packed.body, maxBuffer: 1 << 30 });
        if (cli.error === undefined) expect(cli.stdout.equals(DECODE[coding](r.packed.body)), `${coding} -dc`).toBe(true);
      }
    }
  });
});

describe('one gzip member around a stored deflate stream', () => {
  it('combines CRC32s as zlib computes them over the joined bytes', async () => {
    const { crc32 } = await import('node:zlib');
    const { crc32Combine } = await import('../../src/service/http/gzipMember.ts');
    for (const [a, b] of [['', ''], ['head', ''], ['', 'rows'], ['{"x":1}', 'x'.repeat(70_000)], ['ab', Buffer.alloc(1 << 20, 7).toString()]] as const) {
      expect(crc32Combine(crc32(a), crc32(b), Buffer.byteLength(b)), `${a.length}+${b.length}`).toBe(crc32(a + b));
    }
  });
});

describe('a frame of a byte range given by its path', () => {
  // An Arrow page sent from the encoder's buffers has no file open: its frame is compressed from
  // rows.arrow, opened for that alone.
  it.each(['zstd', 'gzip'] as const)('is stored and served as for an open range (%s)', async (coding) => {
    const { storedFrames } = await import('../../src/service/http/compressedFrames.ts');
    const dir = await mkdtemp(join(tmpdir(), 'sluice-frame-path-'));
    try {
      const file = join(dir, 'rows.arrow');
      const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7919) % 251));
      await writeFile(file, bytes);
      const [head, tail] = [Buffer.from('schema'), Buffer.from('eos')];
      const page = { store: { dir: join(dir, 'frames'), scratch: join(dir, 'frame-') }, file: 'rows.arrow' as const, head, rows: { path: file, start: 1000, end: 250_000 }, tail };
      for (const turn of ['compressed and stored', 'from the stored frame']) {
        const body = (await storedFrames(page)(coding))!;
        const pieces: Buffer[] = [];
        for (const p of body.parts) {
          if (typeof p === 'string') pieces.push(Buffer.from(p));
          else if (p instanceof Uint8Array) pieces.push(Buffer.from(p));
          else {
            pieces.push((await p.handle.readFile()).subarray(p.start, p.end));
            await p.handle.close();
          }
        }
        const packed = Buffer.concat(pieces);
        expect(packed.length, turn).toBe(body.length);
        expect(DECODE[coding](packed).equals(Buffer.concat([head, bytes.subarray(1000, 250_000), tail])), turn).toBe(true);
      }
      expect(await readdir(join(dir, 'frames'))).toEqual([`rows.arrow.1000-250000.${coding === 'gzip' ? 'deflate' : 'zstd'}`]);
      // Nothing left under the scratch prefix.
      expect((await readdir(dir)).sort()).toEqual(['frames', 'rows.arrow']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
