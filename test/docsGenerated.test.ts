// The pages of docs/ generated from the code (`npm run docs`) are current: the job file reference
// says what the schema says, field by field.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generatedPages } from '../scripts/docs.ts';
import { ROOT } from './cli/sluiceProcess.ts';
import { jobFileReference } from '../src/config/reference.ts';
import { jobFileJsonSchema } from '../src/config/jsonSchema.ts';
import { builtins } from '../connectors/index.ts';
import { FIGURES, performancePage } from '../bench/figures.ts';

describe('generated docs', () => {
  it.each(generatedPages().map((p) => [p.path, p.text] as const))('%s is current (else run `npm run docs`)', (path, text) => {
    const onDisk = readFileSync(join(ROOT, path), 'utf8');
    // A plain equality: a diff of two long pages is what the reader needs to see.
    expect(onDisk, `${path} is not what \`npm run docs\` writes from the schema: run it and commit the page`).toBe(text);
  });

  it("every example's editor comment names a schema file that exists and is the job file schema", () => {
    const examples = readdirSync(join(ROOT, 'config', 'examples')).filter((f) => f.endsWith('.yaml'));
    const named = examples.flatMap((f) => {
      const ref = /^# yaml-language-server: \$schema=(\S+)$/m.exec(readFileSync(join(ROOT, 'config', 'examples', f), 'utf8'))?.[1];
      return ref === undefined ? [] : [[f, ref] as const];
    });
    expect(named.length).toBeGreaterThan(0);
    for (const [f, ref] of named) {
      const path = join(ROOT, 'config', 'examples', ref);
      expect(existsSync(path), `${f} names ${ref}`).toBe(true);
      expect(JSON.parse(readFileSync(path, 'utf8')), f).toEqual(jobFileJsonSchema(builtins));
    }
  });

  it('lists every field of the schema with its description, at its path', () => {
    const page = jobFileReference(jobFileJsonSchema(builtins));
    for (const [field, described] of [
      ['max_rows_per_file', 'Start a new file after this many rows'],
      ['row_group_size', 'Maximum rows per row group.'],
      ['max_age_hours', 'Use the newest finished result'],
      ['lookback', 'Read again this far below the committed value'],
      ['sample_rows', 'Rows of sample.events'],
    ]) {
      expect(page).toMatch(new RegExp(`^\\| \`${field}\`[^\\n]*${described!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`, 'm'));
    }
    for (const section of ['`connection.embedded`', '`jobs[].outputs[].s3`', '`jobs[].outputs[]` with `format: csv`', '`jobs[].source.latest`', '`jobs[].outputs[].format_options.columns.<name>` (`format: parquet`)']) {
      expect(page).toContain(`## ${section}\n`);
    }
  });

  it('lists the service settings with their defaults', () => {
    const page = generatedPages().find((p) => p.path === 'docs/service-settings.md')!.text;
    expect(page).toMatch(/^\| `page_rows` \| integer > 0 \| `32000` \| Most rows on one result page \|$/m);
    expect(page).toMatch(/^\| `memory_limit` \| [^|]+ \| `"256MiB"` \| DuckDB's memory limit/m);
    expect(page).toContain('## `teams[].keys[]`\n');
  });

  it.each(generatedPages().filter((p) => p.path.endsWith('.md')).map((p) => [p.path, p.text] as const))('%s links every section it names to an anchor on the page', (_path, page) => {
    const anchors = new Set([...page.matchAll(/<a id="([^"]+)"><\/a>/g)].map((m) => m[1]));
    const links = [...page.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]);
    expect(links.length).toBeGreaterThan(5);
    expect(links.filter((l) => !anchors.has(l))).toEqual([]);
    expect(anchors.size).toBe([...page.matchAll(/<a id=/g)].length);
  });
});

// docs/performance.md is written by `npm run bench`, never by a test (no test times anything): these
// check its shape and that a bench run of some areas keeps the figures of the others.
describe('docs/performance.md', () => {
  it('has one row per figure the benches record, in their order', () => {
    const page = readFileSync(join(ROOT, 'docs', 'performance.md'), 'utf8');
    expect(page).toBe(performancePage(page, new Map()));
    const rows = [...page.matchAll(/^\| (.+) \| [^|]+ \| `([a-z]+)` \|/gm)].map(([, what, area]) => ({ what, area }));
    expect(rows).toEqual(FIGURES.map(({ what, area }) => ({ what, area })));
  });

  it('takes the figures of this run and keeps every other row as it was', () => {
    const [first, second] = FIGURES;
    const before = performancePage('', new Map([[first.id, { value: '1.00x as fast', measured: 'day one' }], [second.id, { value: '2.00x the time', measured: 'day one' }]]));
    const after = performancePage(before, new Map([[second.id, { value: '3.00x the time', measured: 'day two' }]]));
    expect(after).toContain(`| ${first.what} | 1.00x as fast | \`${first.area}\` | day one |`);
    expect(after).toContain(`| ${second.what} | 3.00x the time | \`${second.area}\` | day two |`);
    expect(after).toContain(`| ${FIGURES[2].what} | not measured yet |`);
  });
});

