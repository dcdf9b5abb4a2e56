import { describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { JobFileError, parseJobFile } from '../../src/config/index.ts';

// Loading a job file resolves every output (format, sink, the sink's block, the rules between
// them), so what cannot work is reported by `sluice validate` with its place in the file, before
// any execution is started and paid for.

const file = (output: string, connection = '') => `${connection}jobs:\n  - name: j\n    source: { sql: select 1 }\n    outputs:\n      - format: csv\n${output}`;

function problems(text: string): string[] {
  try {
    parseJobFile(text, { file: 'jobs.yaml', registry: builtins, env: {} });
  } catch (error) {
    expect(error).toBeInstanceOf(JobFileError);
    return (error as Error).message.split('\n');
  }
  throw new Error('expected the job file to be rejected');
}

describe('outputs are resolved when the job file loads', () => {
  it('an s3: block on a local path', () => {
    expect(problems(file('        path: ./out\n        s3: { region: eu-west-1 }\n'))).toEqual([
      'jobs.yaml:7:13 jobs[0].outputs[0].s3: s3 settings apply only to s3://bucket/prefix, not to this path, got {"region":"eu-west-1"}',
    ]);
  });

  it('a bucket name S3 refuses, an upper-case scheme, a single slash', () => {
    const bucket = 'expected s3://bucket/prefix with a valid bucket name (3-63 lowercase letters, digits, dots, hyphens) and no . or .. segments';
    expect(problems(file('        path: s3://My_Bucket/p\n'))).toEqual([`jobs.yaml:6:15 jobs[0].outputs[0].path: ${bucket}, got "s3://My_Bucket/p"`]);
    const scheme = 'expected s3://bucket/prefix (the scheme in lowercase, then two slashes)';
    expect(problems(file('        path: S3://bucket/p\n'))).toEqual([`jobs.yaml:6:15 jobs[0].outputs[0].path: ${scheme}, got "S3://bucket/p"`]);
    expect(problems(file('        path: s3:/bucket/p\n'))).toEqual([`jobs.yaml:6:15 jobs[0].outputs[0].path: ${scheme}, got "s3:/bucket/p"`]);
  });

  it('a scheme no sink serves', () => {
    expect(problems(file('        path: hdfs://bucket/p\n'))).toEqual([
      'jobs.yaml:6:15 jobs[0].outputs[0].path: no destination accepts this path (expected s3://bucket/prefix; azure://container/prefix or abfss://container@account.dfs.core.windows.net/prefix; gs://bucket/prefix; - (standard output); a local directory or file:// URL), got "hdfs://bucket/p"',
    ]);
  });

  it('a GCS path with a bad bucket name, and key_file beside anonymous', () => {
    const gcsBucket = 'expected gs://bucket/prefix (a bucket name of 3-63 lowercase letters, digits, hyphens, underscores and dots, not starting with goog; no . or .. segments)';
    expect(problems(file('        path: gs://My_Bucket/p\n'))).toEqual([`jobs.yaml:6:15 jobs[0].outputs[0].path: ${gcsBucket}, got "gs://My_Bucket/p"`]);
    expect(problems(file('        path: gs:/bucket/p\n'))).toEqual([`jobs.yaml:6:15 jobs[0].outputs[0].path: ${gcsBucket}, got "gs:/bucket/p"`]);
    expect(problems(file('        path: gs://bucket/p\n        gcs: { anonymous: true, key_file: /k.json }\n'))).toEqual([
      'jobs.yaml:7:27 jobs[0].outputs[0].gcs.anonymous: anonymous and key_file are alternatives: give one of them, or neither and use application default credentials, got true',
    ]);
  });

  it('standard output with partition_by', () => {
    expect(problems(file('        path: "-"\n        partition_by: [a]\n'))).toEqual([
      'jobs.yaml:6:15 jobs[0].outputs[0].path: - (standard output) takes one stream: drop partition_by and max_*_per_file, got "-"',
    ]);
  });

  it('an access key without its secret', () => {
    expect(problems(file('        path: s3://bucket/p\n        s3:\n          access_key_id: AKIAEXAMPLE\n'))).toEqual([
      'jobs.yaml:8:11 jobs[0].outputs[0].s3.secret_access_key: access_key_id and secret_access_key go together: give both or neither',
    ]);
  });

  it('table: iceberg with a format other than parquet, on standard output, or dropping the partition columns; append to standard output; unknown words', () => {
    const withFormat = (format: string, output: string) => file(output).replace('format: csv', `format: ${format}`);
    expect(problems(file('        path: ./out\n        table: iceberg\n'))).toEqual([
      'jobs.yaml:5:17 jobs[0].outputs[0].format: table: iceberg writes Parquet data files: set format: parquet, or drop table: iceberg, got "csv"',
    ]);
    expect(problems(withFormat('parquet', '        path: "-"\n        table: iceberg\n'))).toEqual([
      'jobs.yaml:6:15 jobs[0].outputs[0].path: table: iceberg needs a place for a table (s3://bucket/prefix; azure://container/prefix or abfss://container@account.dfs.core.windows.net/prefix; gs://bucket/prefix; a local directory or file:// URL), not - (standard output), got "-"',
    ]);
    expect(problems(withFormat('parquet', '        path: ./t\n        table: iceberg\n        partition_by: [a]\n        keep_partition_columns: false\n'))).toEqual([
      'jobs.yaml:9:33 jobs[0].outputs[0].keep_partition_columns: an Iceberg table keeps the partition columns in its data files (engines read them there): drop keep_partition_columns, got false',
    ]);
    // Append is for directories and prefixes (a manifest output keeps its parts, an Iceberg table adds a snapshot), not standard output.
    expect(problems(withFormat('parquet', '        path: "-"\n        mode: append\n'))).toEqual([
      'jobs.yaml:7:15 jobs[0].outputs[0].mode: - (standard output) takes one stream and keeps no commit to append to: use a directory or bucket path, got "append"',
    ]);
    expect(problems(withFormat('parquet', '        path: ./t\n        table: delta\n        mode: upsert\n'))).toEqual([
      'jobs.yaml:7:16 jobs[0].outputs[0].table: expected one of manifest|iceberg, got "delta"',
      'jobs.yaml:8:15 jobs[0].outputs[0].mode: expected one of replace|append, got "upsert"',
    ]);
    // Resolved: Iceberg outputs keep their partition columns; the defaults are the manifest and replace.
    const ok = (output: string) => parseJobFile(withFormat('parquet', output), { file: 'jobs.yaml', registry: builtins, env: {} }).jobs[0]!.outputs[0]!;
    expect(ok('        path: s3://lake/t\n        table: iceberg\n        mode: append\n        partition_by: [a]\n')).toMatchObject({ table: 'iceberg', mode: 'append', keepPartitionColumns: true, partitionBy: ['a'] });
    expect(ok('        path: ./t\n')).toMatchObject({ table: 'manifest', mode: 'replace', keepPartitionColumns: false });
    expect(ok('        path: ./t\n        mode: append\n')).toMatchObject({ table: 'manifest', mode: 'append' });
  });

  it('a base_url without a scheme', () => {
    expect(problems(file('        path: ./out\n', 'connection:\n  base_url: localhost:18080\n'))).toEqual([
      'jobs.yaml:2:13 connection.base_url: expected an http:// or https:// URL, e.g. http://localhost:18080, got "localhost:18080"',
    ]);
  });

  it('reports every output of every job at once, and jobs carry the resolved outputs', () => {
    const two = `jobs:\n  - name: a\n    source: { sql: select 1 }\n    outputs:\n      - { format: csv, path: "s3://A/x" }\n      - { format: csv, path: "gs://b/x" }\n  - name: b\n    source: { sql: select 1 }\n    outputs:\n      - { format: csv, path: "-", max_rows_per_file: 5 }\n`;
    expect(problems(two).map((line) => line.split(' ')[0] + ' ' + line.split(' ')[1])).toEqual([
      'jobs.yaml:5:30 jobs[0].outputs[0].path:',
      'jobs.yaml:6:30 jobs[0].outputs[1].path:',
      'jobs.yaml:10:30 jobs[1].outputs[0].path:',
    ]);
    const loaded = parseJobFile(file('        path: s3://bucket/p\n        s3: { region: eu-west-1 }\n'), { file: 'jobs.yaml', registry: builtins, env: {} });
    const output = loaded.jobs[0]!.outputs[0]!;
    expect(output.sink.type).toBe('s3');
    expect(output.format.type).toBe('csv');
    expect(output.sinkConfig).toMatchObject({ url: 's3://bucket/p', region: 'eu-west-1', part_size_mb: 8 });
  });
});
