// The examples of the docs are examples too: the annotated job file (docs/running-jobs.md) must stay
// a valid job file, the service settings (docs/local-service.md) valid settings.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseJobFile } from '../../src/config/index.ts';
import { parseSettings } from '../../src/service/settings.ts';
import { ROOT } from '../cli/sluiceProcess.ts';
import { builtins } from '../../connectors/index.ts';

/** The first yaml block under a heading of a page of docs/. */
function docsYaml(page: string, heading: string): string {
  const doc = readFileSync(join(ROOT, 'docs', page), 'utf8');
  const section = doc.indexOf(heading);
  const start = doc.indexOf('```yaml\n', section);
  const end = doc.indexOf('\n```', start + 8);
  if (section < 0 || start < 0 || end < 0) throw new Error(`docs/${page} has no yaml block under "${heading}"`);
  return doc.slice(start + 8, end);
}

describe('the annotated job file of docs/running-jobs.md', () => {
  it('is a valid job file using the documented fields', () => {
    const file = parseJobFile(docsYaml('running-jobs.md', '## An annotated job file'), { file: 'docs/running-jobs.md', registry: builtins, env: {} });
    const [job] = file.jobs;
    expect(job?.name).toBe('daily-events');
    expect(job?.outputs[0]).toMatchObject({ format: { type: 'parquet' }, partitionBy: ['day'], maxOpenFiles: 16, keepPartitionColumns: false });
    expect(job?.budget).toEqual({ max_credits: 10, max_bytes: 1_000_000_000 });
  });
});

describe('the service settings example of docs/local-service.md', () => {
  it('is valid service settings', () => {
    const settings = parseSettings(parse(docsYaml('local-service.md', '## Settings')), 'docs/local-service.md');
    expect(settings.teams[0]).toMatchObject({ name: 'demo', plan: { max_inflight: 3 } });
    expect(settings.limits.page_rows).toBe(32_000);
  });
});
