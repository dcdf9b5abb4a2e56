import { readFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { stream } from '../../pipeline/stream.ts';
import { PERFORMANCE_TIERS, type ParameterValue, type Performance } from '../../protocol/index.ts';
import { defineCommand, flag, listOption, stringOption, type OptionSpec, type OptionValues } from '../command.ts';
import { CONNECTION_OPTIONS, withConnection } from '../connection.ts';
import { EXIT } from '../exitCodes.ts';
import { createProgressBar } from '../progress.ts';
import { chooseFormat, openTarget, parseOut } from '../output/outTarget.ts';
import { writeResult } from '../output/writeResult.ts';
import { UsageError } from '../usageError.ts';
import type { CommandContext } from '../command.ts';
import type { StreamSource } from '../../pipeline/source.ts';

/** Options shared by `query` and `results`: how rows are shaped and where they go. */
export const ROW_OUTPUT_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  format: { type: 'string', short: 'f', valueName: 'FMT', description: 'table, csv, ndjson, arrow or parquet (default: from the --out extension, else table on a terminal, csv in a pipe)' },
  out: {
    type: 'string',
    short: 'o',
    valueName: 'DEST',
    description: 'Write here instead of stdout, atomically: a local file, file://, s3://bucket/key, or - (stdout). Checked before the query runs',
  },
  limit: { type: 'string', valueName: 'N', description: 'At most N rows, in any format (default: all; the table shows 100)' },
  crlf: { type: 'boolean', description: 'End CSV lines with \\r\\n as RFC 4180 says (default \\n, what awk, cut and wc expect)' },
  columns: { type: 'string', valueName: 'A,B', description: 'Only these columns' },
  filters: { type: 'string', valueName: 'EXPR', description: "Server-side row filter, e.g. \"amount > 10 AND name = 'x'\"" },
  'sort-by': { type: 'string', valueName: 'EXPR', description: 'Server-side order, e.g. "id desc"' },
  concurrency: { type: 'string', valueName: 'N', description: 'Result pages fetched in parallel', default: '4' },
  's3-endpoint': { type: 'string', valueName: 'URL', description: 'S3-compatible endpoint for --out s3://... (default: the AWS standard chain)' },
  's3-region': { type: 'string', valueName: 'REGION', description: 'Region for --out s3://... (default: the AWS standard chain)' },
};

/** Rows the table format shows when --limit is not given. */
const TABLE_ROWS = 100;

export const queryCommand = defineCommand({
  name: 'query',
  summary: 'Run SQL or a saved query and print the rows (table, CSV, NDJSON, Arrow) or write them to a file or S3',
  args: '["<sql>" | -]',
  minArgs: 0,
  maxArgs: 1,
  options: {
    ...ROW_OUTPUT_OPTIONS,
    file: { type: 'string', valueName: 'FILE', description: 'Read the SQL from this file (- for stdin)' },
    'query-id': { type: 'string', valueName: 'ID', description: 'Run this saved query instead of SQL' },
    param: { type: 'string', multiple: true, valueName: 'KEY=VALUE', description: 'A parameter of the saved query (repeatable)' },
    latest: { type: 'boolean', description: "With --query-id: read the query's latest stored result instead of running it" },
    performance: { type: 'string', valueName: 'TIER', description: PERFORMANCE_TIERS.join(', '), default: 'medium' },
    ...CONNECTION_OPTIONS,
  },
  details: [
    'The SQL comes from the argument, from stdin (argument -, or --file -), or from --file; or run a',
    'saved query with --query-id and --param KEY=VALUE.',
    '',
    'Examples:',
    '  sluice query "select * from sample.events limit 5"',
    '  sluice query --file report.sql --out s3://bucket/reports/today.parquet',
    '  sluice query --query-id 42 --param day=2026-01-01 --out rows.ndjson',
    '  echo "select 1" | sluice query - --format ndjson',
  ].join('\n'),
  async run(ctx) {
    const performance = stringOption(ctx.values, 'performance') ?? 'medium';
    if (!(PERFORMANCE_TIERS as readonly string[]).includes(performance)) throw new UsageError(`--performance must be one of ${PERFORMANCE_TIERS.join(', ')}, got ${JSON.stringify(performance)}`);
    return printRows(ctx, await querySource(ctx, performance as Performance));
  },
});

/** Exactly one of: SQL as the argument, SQL from --file or stdin, a saved query. */
async function querySource({ values, positionals, io }: CommandContext, performance: Performance): Promise<StreamSource> {
  const file = stringOption(values, 'file');
  const queryId = stringOption(values, 'query-id');
  const given = [positionals.length > 0 ? 'an SQL argument' : undefined, file === undefined ? undefined : '--file', queryId === undefined ? undefined : '--query-id'].filter((s) => s !== undefined);
  if (given.length !== 1) {
    throw new UsageError(given.length === 0 ? 'give the SQL as an argument, - or --file FILE to read it, or --query-id ID' : `give one of ${given.join(', ')}, not several`);
  }
  const params = listOption(values, 'param');
  if (queryId === undefined && (params.length > 0 || flag(values, 'latest'))) throw new UsageError('--param and --latest go with --query-id');
  if (queryId !== undefined) {
    if (!/^\d+$/.test(queryId)) throw new UsageError(`--query-id must be a whole number, got ${JSON.stringify(queryId)}`);
    const parameters: Record<string, ParameterValue> = {};
    for (const p of params) {
      const eq = p.indexOf('=');
      if (eq < 1) throw new UsageError(`--param must look like KEY=VALUE, got ${JSON.stringify(p)}`);
      parameters[p.slice(0, eq)] = p.slice(eq + 1);
    }
    return { queryId: Number(queryId), ...(params.length > 0 ? { parameters } : {}), performance, ...(flag(values, 'latest') ? {} : { fresh: true }) };
  }
  const from = file ?? (positionals[0] === '-' ? '-' : undefined);
  const sql = from === undefined ? positionals[0]! : from === '-' ? await readAll(io.stdin) : await readSqlFile(from, io.cwd);
  if (sql.trim() === '') throw new UsageError(`no SQL in ${from === '-' ? 'stdin' : from === undefined ? 'the argument' : from}`);
  return { sql, performance };
}

async function readSqlFile(path: string, cwd: string): Promise<string> {
  const { resolve } = await import('node:path');
  try {
    return await readFile(resolve(cwd, path), 'utf8');
  } catch (error) {
    throw new UsageError(`--file ${path}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
}

async function readAll(input: Readable): Promise<string> {
  let text = '';
  for await (const chunk of input) text += typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
  return text;
}

/**
 * Streams a source's rows to stdout, a file or S3, with a progress bar on a terminal when not
 * writing to stdout. The destination is checked before the source runs: a mistake there costs nothing.
 */
export async function printRows(ctx: CommandContext, source: StreamSource): Promise<number> {
  const { io, values, log, signal } = ctx;
  const target = parseOut(stringOption(values, 'out'), io.cwd);
  const format = chooseFormat(stringOption(values, 'format'), target, io.stdout.isTTY === true);
  const limit = positiveInt(values, 'limit');
  const concurrency = positiveInt(values, 'concurrency');
  const columns = stringOption(values, 'columns')?.split(',').map((c) => c.trim()).filter(Boolean);
  const opened = await openTarget(target, { endpoint: stringOption(values, 's3-endpoint'), region: stringOption(values, 's3-region') }, signal);
  try {
    return await withConnection(values, io, log, signal, async ({ client }) => {
      const showBar = target.kind !== 'stdout' && io.stderr.isTTY === true && log.format === 'text' && !flag(values, 'quiet');
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
      const written = await writeResult(result, {
        format,
        target: opened,
        stdout: io.stdout,
        signal,
        crlf: flag(values, 'crlf'),
        ...(limit === undefined ? (format.format === 'table' ? { limit: TABLE_ROWS } : {}) : { limit }),
      });
      bar?.done();
      const info = await result.info();
      if (target.kind !== 'stdout') log.info('wrote the result', { destination: opened.url, format: format.format, rows: written.rows, bytes: written.bytes, execution_id: info.executionId });
      return EXIT.ok;
    });
  } finally {
    opened.close();
  }
}

function positiveInt(values: OptionValues, name: string): number | undefined {
  const text = stringOption(values, name);
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive whole number, got ${JSON.stringify(text)}`);
  return n;
}
