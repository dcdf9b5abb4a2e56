import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { builtins } from '../../connectors/index.ts';
import { jobFileJsonSchema, JobFileError, parseJobFile } from '../../src/config/index.ts';
import { writeExport } from '../../src/export/index.ts';
import { defineSink, type Registry } from '../../src/kit/index.ts';
import { memoryStore } from '../helpers/memoryStore.ts';
import { numbered, numberedSchema } from '../connectors/fixtures.ts';

// A sink brings its own YAML block: registering one is a change of the registry handed in, not of
// src/. This in-memory object store is the test's own connector (it is what is being tested), not a fake.

const stores = new Map<string, Map<string, { body: Uint8Array; modified: number }>>();

const memoryOptions = z.strictObject({
  label: z.string().min(1).describe('A name for messages.'),
  compress: z.boolean().default(false).describe('Pretend to compress.'),
});

const memory = defineSink({
  type: 'memory',
  description: 'Objects kept in this process.',
  paths: 'mem://store',
  config: memoryOptions.extend({ url: z.string().regex(/^mem:\/\/[a-z]+$/, 'expected mem://store') }),
  options: { key: 'memory', schema: memoryOptions },
  accepts: (url) => url.startsWith('mem://'),
  create: (config) => {
    const objects = stores.get(config.url) ?? new Map<string, { body: Uint8Array; modified: number }>();
    stores.set(config.url, objects);
    return memoryStore(config.url, objects);
  },
});

const registry: Registry = { formats: builtins.formats, sinks: [...builtins.sinks, memory] };

const jobFile = (output: string) => `jobs:\n  - name: mem\n    source: { sql: select 1 }\n    outputs:\n${output}`;

describe('a sink registered from outside src/', () => {
  it('validates its own block in job files, resolves it, and takes the rows', async () => {
    const file = parseJobFile(jobFile('      - format: ndjson\n        path: mem://events\n        memory: { label: events }\n'), { file: 'jobs.yaml', registry, env: {} });
    const output = file.jobs[0]!.outputs[0]!;
    expect(output.sink).toBe(memory);
    expect(output.sinkConfig).toEqual({ url: 'mem://events', label: 'events', compress: false });

    const summary = await writeExport({ schema: numberedSchema, batches: numbered(10, 4), meta: { executionId: 'e-mem', totalRowCount: 10 } }, output);
    expect(summary.rows).toBe(10);
    const names = [...stores.get('mem://events')!.keys()].sort();
    expect(names).toEqual(['_SUCCESS', '_manifest.json', expect.stringMatching(/^part-00000-.*\.ndjson$/)]);
  });

  it('reports its block, misplaced or wrong, at its line and column', () => {
    const errors = (output: string): string[] => {
      try {
        parseJobFile(jobFile(output), { file: 'jobs.yaml', registry, env: {} });
      } catch (error) {
        expect(error).toBeInstanceOf(JobFileError);
        return (error as Error).message.split('\n');
      }
      throw new Error('expected a JobFileError');
    };
    expect(errors('      - format: csv\n        path: ./out\n        memory: { label: x }\n')).toEqual([
      'jobs.yaml:7:17 jobs[0].outputs[0].memory: memory settings apply only to mem://store, not to this path, got {"label":"x"}',
    ]);
    expect(errors('      - format: csv\n        path: mem://events\n        memory: { lable: x }\n')).toEqual([
      'jobs.yaml:7:17 jobs[0].outputs[0].memory.label: required (string)',
      'jobs.yaml:7:19 jobs[0].outputs[0].memory.lable: unknown field, did you mean "label"?',
    ]);
    expect(errors('      - format: csv\n        path: mem://events\n')).toEqual([
      'jobs.yaml:5:9 jobs[0].outputs[0].memory.label: required (string)',
    ]);
    // Built-in blocks still belong to their own sinks.
    expect(errors('      - format: csv\n        path: mem://events\n        memory: { label: x }\n        s3: { region: x }\n')[0]).toMatch(/^jobs\.yaml:8:13 jobs\[0\]\.outputs\[0\]\.s3: s3 settings apply only to s3:\/\/bucket\/prefix/);
  });

  it('shows up in the JSON Schema of job files, with its field descriptions', () => {
    const text = JSON.stringify(jobFileJsonSchema(registry));
    expect(text).toContain('Pretend to compress.');
    expect(text).toContain('mem://store');
  });
});
