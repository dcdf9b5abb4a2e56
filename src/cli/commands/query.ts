import { stream } from '../../pipeline/stream.ts';
import { PERFORMANCE_TIERS, type Performance } from '../../protocol/index.ts';
import { defineCommand, flag, stringOption, type OptionSpec, type OptionValues } from '../command.ts';
import { CONNECTION_OPTIONS, withConnection } from '../connection.ts';
import { EXIT } from '../exit-codes.ts';
import { createProgressBar } from '../progress.ts';
import { chooseFormat, writeResult } from '../output/writeResult.ts';
import { UsageError } from '../usage-error.ts';
import type { CommandContext } from '../command.ts';
import type { StreamSource } from '../../pipeline/source.ts';

/** Options shared by `query` and `results`: how rows are shaped and where they go. */
export const ROW_OUTPUT_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  format: { type: 'string', short: 'f', valueName: 'FMT', description: 'table, csv, ndjson, arrow or parquet (default: from --out, else table on a terminal, csv in a pipe)' },
  out: { type: 'string', short: 'o', valueName: 'FILE', description: 'Write to this file (atomically) instead of stdout' },
  limit: { type: 'string', valueName: 'N', description: 'Rows the table format shows', default: '100' },
  columns: { type: 'string', valueName: 'A,B', description: 'Only these columns' },
  filters: { type: 'string', valueName: 'EXPR', description: "Server-side row filter, e.g. \"amount > 10 AND name = 'x'\"" },
  'sort-by': { type: 'string', valueName: 'EXPR', description: 'Server-side order, e.g. "id desc"' },
  concurrency: { type: 'string', valueName: 'N', description: 'Result pages fetched in parallel', default: '4' },
};

export const queryCommand = defineCommand({
  name: 'query',
  summary: 'Run SQL and print the rows (table, CSV, NDJSON, Arrow) or write them to a file',
  args: '"<sql>"',
  minArgs: 1,
  options: {
    ...ROW_OUTPUT_OPTIONS,
    performance: { type: 'string', valueName: 'TIER', description: 'medium or large', default: 'medium' },
    ...CONNECTION_OPTIONS,
  },
  details: 'Examples:\n  sluice query "select * from sample.events limit 5"\n  sluice query "select * from sample.events" --out events.parquet',
  async run(ctx) {
    const performance = stringOption(ctx.values, 'performance') ?? 'medium';
    if (!(PERFORMANCE_TIERS as readonly string[]).includes(performance)) throw new UsageError(`--performance must be medium or large, got ${JSON.stringify(performance)}`);
    return printRows(ctx, { sql: ctx.positionals[0]!, performance: performance as Performance });
  },
});

/** Streams a source's rows to stdout or --out, with a progress bar on a terminal when writing a file. */
export async function printRows(ctx: CommandContext, source: StreamSource): Promise<number> {
  const { io, values, log, signal } = ctx;
  const out = stringOption(values, 'out');
  const format = chooseFormat(stringOption(values, 'format'), out, io.stdout);
  const limit = positiveInt(values, 'limit');
  const concurrency = positiveInt(values, 'concurrency');
  const columns = stringOption(values, 'columns')?.split(',').map((c) => c.trim()).filter(Boolean);
  return withConnection(values, io, log, async ({ client }) => {
    const showBar = out !== undefined && io.stderr.isTTY === true && log.format === 'text' && !flag(values, 'quiet');
    const bar = showBar ? createProgressBar(io.stderr, 'query') : undefined;
    const result = stream(client, source, {
      signal,
      cancelOnAbort: true,
      ...(concurrency === undefined ? {} : { concurrency }),
      ...(columns && columns.length > 0 ? { columns } : {}),
      ...(stringOption(values, 'filters') === undefined ? {} : { filters: stringOption(values, 'filters')! }),
      ...(stringOption(values, 'sort-by') === undefined ? {} : { sortBy: stringOption(values, 'sort-by')! }),
      onProgress: (p) => bar?.update({ rows: p.rows, totalRows: p.totalRows, pages: p.pages, bytes: p.bytes, elapsedMs: p.elapsedMs, etaMs: p.etaMs }),
    });
    const written = await writeResult(result, { format, out, stdout: io.stdout, signal, ...(limit === undefined ? {} : { tableRows: limit }) });
    bar?.done();
    const info = await result.info();
    if (out !== undefined) log.info('wrote the result', { file: out, format, rows: written.rows, bytes: written.bytes, execution_id: info.executionId });
    return EXIT.ok;
  });
}

function positiveInt(values: OptionValues, name: string): number | undefined {
  const text = stringOption(values, name);
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive whole number, got ${JSON.stringify(text)}`);
  return n;
}
