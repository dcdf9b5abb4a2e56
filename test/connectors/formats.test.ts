import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RecordBatch, Schema } from 'apache-arrow';
import * as pw from 'parquet-wasm';
import { afterAll, describe, expect, it } from 'vitest';
import { csv, parquet } from '../../connectors/index.ts';
import type { Format } from '../../src/kit/index.ts';
import { duckRowsJS as scalar } from '../helpers/duckdb.ts';
import { everyTypeBatch, fromArray, numbered, numberedSchema } from './fixtures.ts';

const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

async function encode(format: Format, schema: Schema, batches: AsyncIterable<RecordBatch>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const c of format.encode(schema, batches)) chunks.push(c);
  return Buffer.concat(chunks);
}

describe('parquet format', () => {
  it.each(['snappy', 'zstd', 'gzip', 'none'] as const)('writes %s with the requested row group size', async (compression) => {
    const bytes = await encode(parquet.create(parquet.config.parse({ compression, row_group_size: 250 })), numberedSchema, numbered(1000, 90));
    const dir = await mkdtemp(join(tmpdir(), 'sluice-pq-'));
    dirs.push(dir);
    const file = join(dir, 'x.parquet');
    await writeFile(file, bytes);
    const meta = await scalar(`SELECT row_group_id, row_group_num_rows::INTEGER AS n, compression FROM parquet_metadata('${file}') WHERE path_in_schema = 'id' ORDER BY row_group_id`);
    expect(meta.map((m) => m.n)).toEqual([250, 250, 250, 250]);
    expect(String(meta[0]!.compression)).toBe(compression === 'none' ? 'UNCOMPRESSED' : compression.toUpperCase());
  });

  it('embeds the Arrow schema with field and schema metadata', async () => {
    const batch = everyTypeBatch();
    const bytes = await encode(parquet.create(parquet.config.parse({})), batch.schema, fromArray([batch]));
    const schema = pw.readSchema(bytes);
    try {
      expect(schema.metadata().get('sluice.execution_id')).toBe('exec-fixture');
      expect(schema.metadata().has('ARROW:schema')).toBe(false); // consumed by the reader: it rebuilt the schema from it
    } finally {
      schema.free();
    }
    const table = pw.readParquet(bytes);
    const ipc = table.intoIPCStream();
    const { tableFromIPC } = await import('apache-arrow');
    const back = tableFromIPC(ipc);
    expect(back.schema.fields.map((f) => String(f.type))).toEqual(batch.schema.fields.map((f) => String(f.type)));
    expect(back.schema.fields.find((f) => f.name === 'u256')!.metadata.get('service.type')).toBe('uint256');
  });
});

describe('csv format', () => {
  it('honours the delimiter and line terminator, quoting only where needed', async () => {
    const format = csv.create(csv.config.parse({ delimiter: ';', line_terminator: 'lf' }));
    const text = Buffer.from(await encode(format, numberedSchema, numbered(4, 4))).toString('utf8');
    expect(text).toBe('id;name;grp\n9007199254740000;row 0;\n9007199254740001;row 1;g1\n9007199254740002;row 2;g2\n9007199254740003;row 3;\n');
  });

  it('rejects a quote as delimiter with the field named', () => {
    const result = csv.config.safeParse({ delimiter: '"' });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual(['delimiter']);
  });
});
