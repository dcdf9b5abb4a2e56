import type { RecordBatch, Schema } from 'apache-arrow';
import { z } from 'zod';
import { defineFormat, textRows, valueText } from '../../../src/kit/index.ts';

export const csvConfig = z.strictObject({
  delimiter: z
    .string()
    .length(1)
    .refine((d) => d !== '"' && d !== '\r' && d !== '\n', 'the delimiter cannot be a quote or a line break')
    .default(',')
    .describe('Field separator, one character (",", ";", "\\t", "|").'),
  header: z.boolean().default(true).describe('Write the column names as the first line.'),
  line_terminator: z
    .enum(['crlf', 'lf'])
    .default('crlf')
    .describe('Record separator: crlf as RFC 4180 says, or lf.'),
});
export type CsvConfig = z.output<typeof csvConfig>;

export const csv = defineFormat({
  type: 'csv',
  description: 'RFC 4180 CSV: header, NULL as an empty field, the empty string as "", exact text for every type.',
  config: csvConfig,
  create: (config: CsvConfig) => ({
    extension: 'csv',
    contentType: 'text/csv; charset=utf-8',
    encode: (schema, batches, signal) => encodeCsv(schema, batches, config, signal),
  }),
});

async function* encodeCsv(
  schema: Schema,
  batches: AsyncIterable<RecordBatch>,
  config: CsvConfig,
  signal?: AbortSignal,
): AsyncIterable<Uint8Array> {
  const eol = config.line_terminator === 'crlf' ? '\r\n' : '\n';
  const { delimiter } = config;
  const needsQuotes = new RegExp(`[${delimiter === '\t' ? '\\t' : escapeClass(delimiter)}"\\r\\n]`);
  const cell = (text: string | null): string => {
    if (text === null) return '';
    // An empty string is quoted so it stays distinct from NULL (an empty field).
    if (text === '' || needsQuotes.test(text)) return `"${text.replaceAll('"', '""')}"`;
    return text;
  };
  const columns = schema.fields.map((f) => valueText(f));
  if (config.header) yield new TextEncoder().encode(schema.fields.map((f) => cell(f.name)).join(delimiter) + eol);
  yield* textRows(
    batches,
    (data, row) => {
      let out = '';
      for (let c = 0; c < columns.length; c++) {
        if (c > 0) out += delimiter;
        out += cell(columns[c]!.text(data[c]!, row));
      }
      return out + eol;
    },
    signal,
  );
}

function escapeClass(ch: string): string {
  return ch.replace(/[\\\]^-]/g, '\\$&');
}
