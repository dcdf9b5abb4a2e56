// The README's job file reference is an example too: it must stay a valid job file.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseJobFile } from '../../src/config/index.ts';
import { parseSettings } from '../../src/service/settings.ts';
import { ROOT } from '../cli/sluiceProcess.ts';
import { builtins } from '../../connectors/index.ts';

/** The first yaml block under a README heading. */
function readmeYaml(heading: string): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.indexOf(heading);
  const start = readme.indexOf('```yaml\n', section);
  const end = readme.indexOf('\n```', start + 8);
  if (section < 0 || start < 0 || end < 0) throw new Error(`README.md has no yaml block under "${heading}"`);
  return readme.slice(start + 8, end);
}

describe('the README job file example', () => {
  it('is a valid job file using the documented fields', () => {
    const file = parseJobFile(readmeYaml('## Job files'), { file: 'README.md', registry: builtins, env: {} });
    const [job] = file.jobs;
    expect(job?.name).toBe('daily-events');
    expect(job?.outputs[0]).toMatchObject({ format: { type: 'parquet' }, partitionBy: ['day'], maxOpenFiles: 16, keepPartitionColumns: false });
    expect(job?.budget).toEqual({ max_credits: 10, max_bytes: 1_000_000_000 });
  });
});

describe('the README service settings example', () => {
  it('is valid service settings', () => {
    const settings = parseSettings(parse(readmeYaml('## The local query service')), 'README.md');
    expect(settings.teams[0]).toMatchObject({ name: 'demo', plan: { max_inflight: 3 } });
    expect(settings.limits.page_rows).toBe(32_000);
  });
});
