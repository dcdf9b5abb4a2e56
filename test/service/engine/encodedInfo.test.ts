// A format directory's info.json says its encoding is whole, and readers look for it while the
// encoder of a first read ends: a reader must find no file or the whole file, never an empty or
// half-written one (which once answered a page with 500 "Unexpected end of JSON input").
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readEncodedInfo, writeEncodedInfo } from '../../../src/service/engine/encoding/encodedResult.ts';
import type { ResultInfo } from '../../../src/service/engine/types.ts';

let dir: string | undefined;
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('info.json of an encoding', () => {
  it('is never seen empty or half-written by a reader polling while it is written', async () => {
    // Large enough that a plain write is seen part-way, as column names of a wide result make it.
    const names = Array.from({ length: 20_000 }, (_, i) => `column_${i}`);
    const info: ResultInfo = { columnNames: names, columnTypes: names.map(() => 'varchar'), rowCount: 7, bytes: 123, truncated: false } as ResultInfo;
    for (let round = 0; round < 30; round++) {
      dir = await mkdtemp(join(tmpdir(), 'sluice-info-'));
      const d = dir;
      let done = false;
      const writing = writeEncodedInfo(d, info).finally(() => (done = true));
      const seen: (ResultInfo | undefined)[] = [];
      while (!done) seen.push(await readEncodedInfo(d));
      await writing;
      seen.push(await readEncodedInfo(d));
      for (const s of seen) if (s !== undefined) expect(s.columnNames.length).toBe(names.length);
      expect(seen.at(-1)).toEqual(info);
      // Nothing else is left in the directory.
      expect(await readdir(d)).toEqual(['info.json']);
      await rm(d, { recursive: true, force: true });
      dir = undefined;
    }
  });
});
