import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runJob } from '../../src/jobs/run/runJob.ts';
import { duck } from './duck.ts';
import { client, dir, job, useJobHarness } from './jobHarness.ts';

// A job's `workers` after part threads were removed (they made exports slower, docs/performance.md):
// accepted, ignored with a warning that says what to do, and the files those of a job without it.
useJobHarness({ sampleRows: 3000, limits: { page_rows: 400 } }, 'sluice-workers-');
const signal = () => new AbortController().signal;

/** Every file of a directory with its bytes, the manifest aside (it carries the time it was written). */
async function files(root: string): Promise<Record<string, string>> {
  const names = (await readdir(root)).filter((n) => n !== '_manifest.json').sort();
  return Object.fromEntries(await Promise.all(names.map(async (n) => [n, (await readFile(join(root, n))).toString('base64')])));
}

describe('a job with workers', () => {
  it('runs with one warning naming the setting and what to use instead; its files are byte for byte those of the job without it', async () => {
    const split = (suffix: string, workers: string) =>
      job(`  - name: split${suffix}
${workers}    source: { sql: "select id, name, amount, ts from sample.events order by id" }
    outputs:
      - { format: parquet, path: "\${DIR}/split/pq${suffix}", max_rows_per_file: 700 }
      - { format: csv, path: "\${DIR}/split/csv${suffix}", max_rows_per_file: 1000 }
`);
    const plainWarnings: string[] = [];
    const plain = await runJob(split('', ''), { client, stateDir: join(dir, 'state'), signal: signal(), events: { onWarning: (m) => plainWarnings.push(m) } });
    expect(plainWarnings).toEqual([]);
    const warnings: { message: string; fields: Record<string, unknown> }[] = [];
    const summary = await runJob(split('-4', '    workers: 4\n'), {
      client,
      stateDir: join(dir, 'state'),
      signal: signal(),
      executionId: plain.executionId,
      events: { onWarning: (message, fields) => warnings.push({ message, fields }) },
    });
    expect(warnings).toEqual([
      {
        message: expect.stringMatching(/^jobs\.split-4\.workers is ignored: part threads were removed.*docs\/performance\.md.*Remove the setting; to use more cores, run the job sharded \(sluice run --processes N\)$/),
        fields: { job: 'split-4', workers: 4 },
      },
    ]);
    // One read for both outputs, as without workers.
    expect(summary).toMatchObject({ rows: 3000, fetchedRows: 3000, files: 8 });
    expect(await files(join(dir, 'split', 'pq-4'))).toEqual(await files(join(dir, 'split', 'pq')));
    expect(await files(join(dir, 'split', 'csv-4'))).toEqual(await files(join(dir, 'split', 'csv')));
    const [check] = await duck(`select count(*)::int as n, count(distinct id)::int as ids, bool_and(id = rn - 1) as ordered from (select id, row_number() over () as rn from read_parquet('${dir}/split/pq-4/*.parquet'))`);
    expect(check).toEqual({ n: 3000, ids: 3000, ordered: true });
  });

  it('still refuses a value that was never valid: the error names the field', () => {
    expect(() => job(`  - name: bad
    workers: 0
    source: { sql: "select 1" }
    outputs: [{ format: csv, path: "\${DIR}/bad" }]
`)).toThrow(/jobs\[0\]\.workers/);
  });
});
