// `sluice run --plan` says the decode path each output takes for the service it talks to, asked the
// way the run asks (the first page of the result, requested as Arrow): the general path over a
// service that serves Arrow pages, the native one (DuckDB writes the Parquet) over one that serves
// only JSON. Then the run takes that path: its summary says which, and its Parquet files are written by DuckDB or not.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startArrowProxy, type ArrowProxy } from '../helpers/arrowProxy.ts';
import { sluice } from '../cli/sluiceProcess.ts';
import { duck } from './duck.ts';
import { client, dir, svc, useJobHarness } from './jobHarness.ts';

useJobHarness({ sampleRows: 1500 }, 'sluice-plan-decode-');
let jsonOnly: ArrowProxy;
beforeAll(async () => {
  // In front of the service's root: the CLI's base URL keeps the service's /api path.
  jsonOnly = await startArrowProxy(new URL('/', svc.url).href, 'json');
});
afterAll(async () => {
  await jsonOnly?.close();
});

const createdBy = async (folder: string) => (await duck(`select distinct created_by from parquet_file_metadata('${folder}/*.parquet')`)).map((r) => String(r['created_by']));

/** A job file of one job reading `source`, one Parquet output under `out`, on `baseUrl` (none: the embedded service). */
async function jobFile(name: string, source: string, baseUrl: string | undefined): Promise<string> {
  const file = join(dir, `${name}.yaml`);
  const connection = baseUrl === undefined ? `connection:\n  embedded: { sample_rows: 500, data_dir: ${join(dir, `${name}-service`)} }` : `connection:\n  base_url: ${baseUrl}`;
  await writeFile(
    file,
    [connection, `state_dir: ${join(dir, `${name}-state`)}`, 'jobs:', `  - name: ${name}`, `    source: ${source}`, `    outputs: [{ format: parquet, path: ${join(dir, name)} }]`, ''].join('\n'),
  );
  return file;
}

async function planned(file: string, env: Record<string, string>): Promise<Record<string, unknown>> {
  const plan = await sluice(['run', file, '--plan', '--json'], { env });
  expect(plan.code, plan.stderr).toBe(0);
  const line = JSON.parse(plan.stdout.trim()) as { outputs: { decode: Record<string, unknown> }[] };
  return line.outputs[0]!.decode;
}

/** Runs the job; the path its summary records for the output. */
async function ran(file: string, env: Record<string, string>): Promise<unknown> {
  const run = await sluice(['run', file, '--json'], { env });
  expect(run.code, run.stderr).toBe(0);
  return (JSON.parse(run.stdout.trim()) as { outputs: { decode?: string }[] }).outputs[0]!.decode;
}

describe('sluice run --plan: the decode path for the service it talks to', () => {
  it('asks the service: general over Arrow pages, native over JSON-only pages; the run then takes that path', async () => {
    const { query_id: queryId } = await client.createQuery({ name: 'events', query_sql: 'select * from sample.events order by id' });
    await (await client.execute({ queryId })).wait();
    const env = { SERVICE_API_KEY: svc.keys.demo.admin };
    const source = `{ latest: { query_id: ${queryId}, max_age_hours: 24 } }`;

    const arrowFile = await jobFile('arrow', source, svc.url);
    expect(await planned(arrowFile, env)).toEqual({ path: 'general', why: expect.stringContaining('the service serves Arrow pages (it answered the first page with one)') });
    expect(await ran(arrowFile, env)).toBe('general');
    expect(await createdBy(join(dir, 'arrow'))).not.toEqual([expect.stringMatching(/DuckDB/i)]);

    const jsonFile = await jobFile('json', source, `${jsonOnly.url}${new URL(svc.url).pathname}`);
    expect(await planned(jsonFile, env)).toEqual({ path: 'native', pages: 'csv', why: expect.stringContaining('the service answered the first page as JSON (it serves no Arrow pages)') });
    expect(await ran(jsonFile, env)).toBe('native');
    expect(await createdBy(join(dir, 'json'))).toEqual([expect.stringMatching(/DuckDB/i)]);
  });

  it('a run that would execute: the embedded service serves Arrow pages (general); another service is not asked, and the plan says so', async () => {
    const embedded = await jobFile('embedded', '{ sql: "select * from sample.events" }', undefined);
    expect(await planned(embedded, {})).toEqual({ path: 'general', why: expect.stringContaining('the embedded service serves Arrow pages') });
    expect(await ran(embedded, {})).toBe('general');
    expect(await createdBy(join(dir, 'embedded'))).not.toEqual([expect.stringMatching(/DuckDB/i)]);

    const remote = await jobFile('remote', '{ sql: "select * from sample.events" }', `${jsonOnly.url}${new URL(svc.url).pathname}`);
    expect(await planned(remote, { SERVICE_API_KEY: svc.keys.demo.admin })).toEqual({
      path: 'native',
      pages: 'csv',
      why: expect.stringContaining('(not asked: the service tells on the first page of the execution the run starts, which a plan does not start)'),
    });
  });
});
