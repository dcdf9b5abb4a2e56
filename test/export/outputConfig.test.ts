import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError } from '../../src/kit/index.ts';
import { outputConfigSchema, resolveOutput } from '../../src/export/index.ts';
import { builtins } from '../../connectors/index.ts';

function issuesOf(input: unknown): { path: string; message: string; value?: unknown }[] {
  try {
    resolveOutput(input, builtins);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return [...(error as ConfigError).issues];
  }
  throw new Error('expected a ConfigError');
}

describe('resolveOutput', () => {
  it('accepts a minimal local export and fills the format defaults', () => {
    const out = resolveOutput({ format: 'parquet', path: '/tmp/x' }, builtins);
    expect(out.format.type).toBe('parquet');
    expect(out.sink.type).toBe('file');
    expect(out.formatConfig).toEqual({ compression: 'zstd', row_group_size: 122_880, data_page_size: 1_048_576, dictionary: 'auto', statistics: 'page', columns: {} });
  });

  it('routes s3:// paths to the s3 sink with its settings', () => {
    const out = resolveOutput({ format: 'csv', path: 's3://my-bucket/a/b/', s3: { region: 'eu-west-1', sse: 'AES256', storage_class: 'STANDARD_IA' } }, builtins);
    expect(out.sink.type).toBe('s3');
    expect(out.sinkConfig).toMatchObject({ url: 's3://my-bucket/a/b/', region: 'eu-west-1', sse: 'AES256', storage_class: 'STANDARD_IA' });
  });

  it('names an unknown top-level field and its value', () => {
    const [issue] = issuesOf({ format: 'csv', path: '/tmp/x', max_row_per_file: 10 });
    expect(issue).toMatchObject({ path: 'max_row_per_file', value: 10 });
    expect(issue!.message).toContain('unknown field');
  });

  it('names a bad codec under format_options', () => {
    try {
      resolveOutput({ format: 'parquet', path: '/tmp/x', format_options: { compression: 'lz5' } }, builtins);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(/format_options\.compression: .*snappy.*\(got "lz5"\)/);
    }
  });

  it('names a bad s3 URL as path', () => {
    for (const path of ['s3://', 's3://Bad_Bucket/x', 's3://ab', 's3://bucket/../x']) {
      const [issue] = issuesOf({ format: 'csv', path });
      expect(issue).toMatchObject({ path: 'path', value: path });
      expect(issue!.message).toContain('s3://bucket/prefix');
    }
  });

  it('names unknown s3 settings and bad values under s3.', () => {
    expect(issuesOf({ format: 'csv', path: 's3://bucket/x', s3: { regoin: 'x' } })[0]).toMatchObject({ path: 's3.regoin', value: 'x' });
    expect(issuesOf({ format: 'csv', path: 's3://bucket/x', s3: { storage_class: 'COLD' } })[0]).toMatchObject({ path: 's3.storage_class', value: 'COLD' });
    expect(issuesOf({ format: 'csv', path: 's3://bucket/x', s3: { access_key_id: 'AKIA' } })[0]).toMatchObject({ path: 's3.secret_access_key' });
  });

  it('rejects s3 settings with a local path, an unknown format, and partitioning on stdout', () => {
    expect(issuesOf({ format: 'csv', path: '/tmp/x', s3: { region: 'x' } })[0]).toMatchObject({ path: 's3' });
    const [format] = issuesOf({ format: 'xlsx', path: '/tmp/x' });
    expect(format).toMatchObject({ path: 'format', value: 'xlsx' });
    expect(format!.message).toContain('parquet, arrow, csv, ndjson');
    expect(issuesOf({ format: 'csv', path: '-', partition_by: ['a'] })[0]).toMatchObject({ path: 'path', value: '-' });
  });

  it('rejects repeated partition columns and tiny byte limits', () => {
    expect(issuesOf({ format: 'csv', path: '/x', partition_by: ['a', 'a'] })[0]).toMatchObject({ path: 'partition_by' });
    expect(issuesOf({ format: 'csv', path: '/x', max_bytes_per_file: 10 })[0]).toMatchObject({ path: 'max_bytes_per_file', value: 10 });
  });

  it('produces a JSON Schema with the field descriptions', () => {
    const schema = JSON.stringify(z.toJSONSchema(outputConfigSchema(builtins)));
    expect(schema).toContain('Page compression codec');
    expect(schema).toContain('Hive partitioning');
    expect(schema).toContain('"additionalProperties":false');
  });
});
