import { describe, expect, it } from 'vitest';
import { jobFileJsonSchema } from '../../src/config/index.ts';
import { builtins } from '../../connectors/index.ts';

describe('jobFileJsonSchema', () => {
  it('describes every field and forbids unknown ones', () => {
    const schema = jobFileJsonSchema(builtins) as { properties: Record<string, { description?: string; items?: unknown }>; additionalProperties: boolean };
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties.jobs?.description).toMatch(/jobs/);
    const text = JSON.stringify(schema);
    // The Parquet options a user of other writers looks for, with the encodings a column may ask for.
    for (const field of ['row_group_size', 'row_group_bytes', 'data_page_size', 'statistics', 'dictionary', 'delta_binary_packed', 'byte_stream_split', 'line_terminator']) {
      expect(text).toContain(`"${field}"`);
    }
    for (const field of ['max_credits', 'max_bytes', 'view_refresh', 'max_age_hours', 'partition_by', 'format_options', 'api_key_env', 'schedule', 'table', 'mode']) {
      expect(text).toContain(`"${field}"`);
    }
    // Every property at every depth has a description (the schema is the field reference).
    const missing: string[] = [];
    const walk = (node: unknown, path: string): void => {
      if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${path}[${i}]`));
      if (typeof node !== 'object' || node === null) return;
      const record = node as Record<string, unknown>;
      if (record.properties && typeof record.properties === 'object') {
        for (const [key, value] of Object.entries(record.properties as Record<string, Record<string, unknown>>)) {
          if (typeof value.description !== 'string') missing.push(`${path}.${key}`);
        }
      }
      for (const [key, value] of Object.entries(record)) walk(value, `${path}.${key}`);
    };
    walk(schema, '$');
    // The output's commit: the two tables and the two modes, as enums editors offer.
    expect(text).toContain('"enum":["manifest","iceberg"]');
    expect(text).toContain('"enum":["replace","append"]');
    expect(missing.filter((p) => !p.includes('.s3.'))).toEqual([]);
  });
});
