import { z } from 'zod';
import { PerformanceSchema } from '../protocol/common.ts';
import { RATE_PLAN_NAMES } from '../protocol/rateLimits.ts';
import { COMPRESSION_MODES, MAX_PAGE_CONCURRENCY } from '../client/config.ts';
import { outputConfigSchema, type ResolvedOutput } from '../export/outputConfig.ts';
import type { Registry } from '../kit/index.ts';
import { parseType } from '../types/parse.ts';
import { parsePredicate, predicateProblem } from './predicate.ts';
import { quarantinePath, quarantinePathProblem } from './quarantinePath.ts';
import { cronProblem, timezoneProblem } from './cron.ts';
import { BackfillSchema, backfillIssues } from './backfillSchema.ts';
import { NotifySchema, SchemaDriftSchema } from './notifySchema.ts';

// The one truth about job files: validation, types (z.infer), `sluice schema` and the job file
// reference (docs/jobs.md, written by `npm run docs`) all come from here. Fields are snake_case like the wire protocol. The outputs'
// formats and sinks come from the registry the caller hands in (the CLI: the built-in connectors).

const ParameterValue = z.union([z.string(), z.number(), z.boolean()]);
const Parameters = z.record(z.string(), ParameterValue).describe('Query parameter values by name (`{{name}}` in the query SQL)');
const QueryId = z.number().int().positive().describe('A saved query id');

export const SqlSourceSchema = z
  .strictObject({ sql: z.string().min(1).describe('SQL to execute (DuckDB dialect on the local service)') })
  .describe('Run this SQL');

export const QuerySourceSchema = z
  .strictObject({ query_id: QueryId, parameters: Parameters.optional() })
  .describe('Execute a saved query with parameters');

export const LatestSourceSchema = z
  .strictObject({
    latest: z
      .strictObject({
        query_id: QueryId,
        parameters: Parameters.optional(),
        max_age_hours: z
          .number()
          .positive()
          .optional()
          .describe('Use the newest finished result if it ended at most this long ago; otherwise execute the query afresh. Absent: any age'),
      })
      .describe('The latest result of a saved query'),
  })
  .describe('Export the latest result of a saved query, executing it only when that is too old');

export const ViewRefreshSourceSchema = z
  .strictObject({
    view_refresh: z
      .strictObject({ name: z.string().min(1).describe('The view: result_<x> or its full name service.<team>.result_<x>') })
      .describe('A materialized view to refresh'),
  })
  .describe('Refresh a materialized view, then export the refresh result');

export const SourceSchema = z
  .union([SqlSourceSchema, QuerySourceSchema, LatestSourceSchema, ViewRefreshSourceSchema])
  .describe('Where the rows come from: exactly one of sql, query_id (+ parameters), latest, view_refresh');
export type Source = z.infer<typeof SourceSchema>;

export const ResultShapingSchema = z
  .strictObject({
    columns: z.array(z.string().min(1)).min(1).optional().describe('Only these columns, in this order'),
    filters: z.string().min(1).optional().describe("Row filter, WHERE-like: `amount > 10 AND kind IN ('a', 'b')`"),
    sort_by: z.string().min(1).optional().describe('`col [asc|desc], ...`'),
    allow_partial: z.boolean().optional().describe('Export a COMPLETED_PARTIAL (truncated) result instead of failing'),
  })
  .describe('Shape the result server-side before it is fetched');

export const BudgetSchema = z
  .strictObject({
    max_credits: z
      .number()
      .nonnegative()
      .optional()
      .describe('Refuse to start a run whose execution would cost more credits than this (10 x tier factor per execution)'),
    max_bytes: z
      .number()
      .int()
      .positive()
      .optional()
      .describe("Stop (and commit nothing) when the result's total_result_set_bytes exceeds this"),
  })
  .describe('Limits on what one run may spend');

export const IncrementalSchema = z
  .strictObject({
    cursor: z
      .string()
      .min(1)
      .describe('The result column that orders the rows (a number, decimal, date, timestamp or text column, never NULL): each run passes the highest value committed so far'),
    parameter: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'a parameter name: letters, digits and _')
      .describe('Receives that value: the saved query parameter (query_id sources), or the {{name}} placeholder in sql (replaced by a number, or a quoted string the engine compares with the column)'),
    initial: z
      .union([z.string(), z.number()])
      .describe("The value of the first run, before any output holds a committed one; must parse as the cursor column's type"),
    lookback: z
      .union([z.string().regex(/^\d+\s*(s|m|h|d)$/, 'a duration such as "30m", "6h" or "2d"'), z.number().nonnegative()])
      .optional()
      .describe('Read again this far below the committed value, for rows that arrive late: a duration (30m, 6h, 2d) for date and timestamp cursors, a number for numeric ones. Needs key'),
    key: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe('Columns that identify a row: a row read again (lookback, or a cursor value shared with rows already committed) is written once. Without key, rows whose cursor is not above the committed value are dropped'),
  })
  .describe(
    'Fetch only new rows: the query receives the highest cursor value committed so far, and the new high-water mark is committed with the rows, in each output (its manifest), so the state travels with the data. Needs mode: append on every output',
  );

const OnViolationSchema = z.enum(['fail', 'warn', 'quarantine']);

/** Distinct values a `unique` check holds: beyond this a run stops rather than grow without bound. */
export const MAX_UNIQUE_VALUES = 2_000_000;

const CheckBound = z.union([z.string(), z.number()]);

export const ColumnCheckSchema = z
  .strictObject({
    not_null: z.boolean().optional().describe('No row may hold NULL'),
    unique: z
      .boolean()
      .optional()
      .describe(`No value may appear twice within the run (NULLs are not compared). Held in memory, one entry per distinct value, at most ${MAX_UNIQUE_VALUES.toLocaleString('en-US')}: check larger keys in the query`),
    accepted_values: z.array(z.union([z.string(), z.number(), z.boolean()])).min(1).optional().describe('Every non-NULL value is one of these (numbers compared as numbers, 1.0 = 1; other values as their text, as CSV writes it)'),
    min: CheckBound.optional().describe("No value below this (numbers, dates, timestamps and text, in the column's order)"),
    max: CheckBound.optional().describe("No value above this (numbers, dates, timestamps and text, in the column's order)"),
    predicate: z
      .string()
      .min(1)
      .optional()
      .describe(
        "A SQL-like condition every row must meet, e.g. \"amount >= 0 and amount < 1e9\" (it may read other columns: \"ended_at >= started_at\"): comparisons, and/or/not, is [not] null, [not] in (...), [not] between, + - * / % on numbers, 'text', true, false, null. A row breaks it when it is false; NULL (unknown) passes, as in a SQL CHECK: add \"x is not null and ...\" to require a value",
      ),
    on_violation: OnViolationSchema.optional().describe('What a violation of this column\'s checks does (default: expect.on_violation)'),
  })
  .describe('Checks on every row of one column, as the rows stream (before anything is published)');
export type ColumnCheck = z.infer<typeof ColumnCheckSchema>;

export const ExpectSchema = z
  .strictObject({
    columns: z
      .record(z.string().min(1), z.string().min(1))
      .optional()
      .describe("Columns the result must have, name: type as the service spells it in column_types (bigint, varchar, decimal(18,2), timestamp ...; case and spaces ignored). Checked from the execution's metadata before any page is fetched: a mismatch fetches, writes and charges nothing beyond the execution. Other columns may be there too"),
    rows: z
      .strictObject({
        min: z.number().int().nonnegative().optional().describe('At least this many rows'),
        max: z.number().int().nonnegative().optional().describe('At most this many rows'),
      })
      .optional()
      .describe("The result's row count: checked before any page is fetched when the service reports it (no result.filters), else at the end of the read, before anything is published"),
    checks: z.record(z.string().min(1), ColumnCheckSchema).optional().describe('Per column: checks on every row while it streams (not_null, unique, accepted_values, min, max, predicate)'),
    on_violation: OnViolationSchema.optional().describe(
      'fail (the default): the run stops and publishes nothing, naming the check, column, row and value; warn: the rows are published, each broken check is logged once and its violations counted in the run summary; quarantine: the rows that break a column check are not written to the outputs but beside each, at its path + _quarantine (same format and sink options), with _check, _column, _reason and _row, committed with the output on every run (columns and rows have no row to set aside: they fail)',
    ),
  })
  .describe('A contract the result must meet before anything is published');
export type Expect = z.infer<typeof ExpectSchema>;

/** Whether some column check of a contract sets its violating rows aside (its own on_violation, or the contract's). */
export function contractQuarantines(expect: Expect | undefined): boolean {
  return Object.values(expect?.checks ?? {}).some((check) => (check.on_violation ?? expect?.on_violation) === 'quarantine');
}

/** A zod check from a function that says what is wrong with a value (undefined: nothing). */
function reportProblem(problemOf: (value: string) => string | undefined) {
  return (value: string, ctx: z.RefinementCtx<string>): void => {
    const problem = problemOf(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  };
}

/** The largest `workers` a job file may still give (ignored since part threads were removed: a file valid before stays valid). */
export const MAX_WORKERS = 64;

const JOB_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/**
 * An output of a job file: the export's output config, and what the run does with it, which the
 * export's schema knows nothing of: its own schema_drift policy and its own contract.
 */
function withRunFields(output: ReturnType<typeof outputConfigSchema>) {
  const expect = ExpectSchema.optional().describe("This output's contract, checked besides the job's expect (which applies to every output): its column checks see the rows this output receives, and quarantine sets them aside beside this output only");
  const variants = output.options.map((variant) => variant.extend({ schema_drift: SchemaDriftSchema.optional(), expect }));
  return z.discriminatedUnion('format', variants as [(typeof variants)[number], ...(typeof variants)[number][]]);
}

function jobSchema(output: ReturnType<typeof withRunFields>) {
  return z
    .strictObject({
      name: z.string().regex(JOB_NAME, 'a job name is letters, digits, _ . and -, starting with a letter or digit').describe('Unique name of the job (used by `sluice run FILE --job NAME`, logs, metrics and resume state)'),
      description: z.string().optional().describe('Free text'),
      source: SourceSchema,
      performance: PerformanceSchema.optional().describe('Performance tier of the execution: small (5 credits), medium (10), large (20, more engine threads) or the legacy free (as small); absent: the service decides by the team plan (medium unless the plan says otherwise)'),
      result: ResultShapingSchema.optional(),
      outputs: z.array(output).min(1).describe('One or more outputs; the rows are fetched once and written to each'),
      schedule: z
        .string()
        .min(1)
        // The syntax does not depend on the time zone; the zone itself is checked on the job.
        .superRefine(reportProblem(cronProblem))
        .optional()
        .describe('Cron expression for `sluice schedule` (five fields, UTC unless timezone is set)'),
      timezone: z
        .string()
        .min(1)
        .superRefine(reportProblem(timezoneProblem))
        .optional()
        .describe('IANA time zone of the schedule (default UTC)'),
      concurrency: z.number().int().min(1).max(MAX_PAGE_CONCURRENCY).optional().describe(`Result pages fetched in parallel (default 4, at most ${MAX_PAGE_CONCURRENCY})`),
      wire: z
        .enum(['auto', 'json', 'arrow'])
        .optional()
        .describe(
          "Result pages as Arrow streams when the service offers them (auto, the default); from a service without Arrow pages, a Parquet output DuckDB can write with the same values reads the service's CSV pages (the native path), and every other output JSON pages; only JSON (json), or only Arrow (an error if the service does not serve Arrow). `sluice run --plan` says which path each output takes",
        ),
      workers: z
        .union([z.literal('auto'), z.number().int().min(1).max(MAX_WORKERS)])
        .optional()
        .describe(
          'Ignored, with a warning: part threads were removed, since a second thread made exports slower and took more CPU (see docs/performance.md). ' +
            'The files are those one thread writes. Remove the setting; to use more cores, run the job sharded (sluice run --processes N)',
        ),
      retries: z.number().int().min(0).max(20).optional().describe('Times a failed run is retried (default 0)'),
      retry_delay_seconds: z.number().nonnegative().optional().describe('Delay before the first retry, doubled for each next one (default 5)'),
      budget: BudgetSchema.optional(),
      incremental: IncrementalSchema.optional(),
      expect: ExpectSchema.optional(),
      backfill: BackfillSchema.optional(),
      schema_drift: SchemaDriftSchema.optional().describe('The schema drift policy of every output that does not set its own schema_drift (default evolve)'),
      notify: NotifySchema.optional(),
    })
    .superRefine((job, ctx) => {
      if (job.incremental) incrementalIssues(job, ctx);
      if (job.expect) expectIssues(job.expect, job.result?.columns, ctx);
      if (job.backfill) backfillIssues(job, ctx);
      job.outputs.forEach((output, i) => {
        if (output.expect !== undefined) expectIssues(output.expect, job.result?.columns, ctx, ['outputs', i, 'expect']);
      });
      if (contractQuarantines(job.expect) || job.outputs.some((o) => contractQuarantines(o.expect))) quarantineIssues(job, ctx);
      const columns = job.result?.columns;
      const paths = new Map<string, number>();
      job.outputs.forEach((output, i) => {
        const partitions = (output as { partition_by?: unknown }).partition_by;
        if (columns && Array.isArray(partitions)) {
          partitions.forEach((column, j) => {
            if (typeof column === 'string' && !columns.includes(column)) {
              ctx.addIssue({ code: 'custom', path: ['outputs', i, 'partition_by', j], message: `partition column "${column}" is not among result.columns (${columns.join(', ')})` });
            }
          });
        }
        // Two outputs into one place would replace each other's files and manifest.
        const path = (output as { path?: unknown }).path;
        if (typeof path === 'string') {
          const key = path.replace(/\/+$/, '');
          const first = paths.get(key);
          if (first !== undefined) ctx.addIssue({ code: 'custom', path: ['outputs', i, 'path'], message: `same path as outputs[${first}].path: each output needs its own directory or prefix` });
          else paths.set(key, i);
        }
      });
    })
    .describe('One job: a source, result shaping and outputs');
}

/** What the schema of one field cannot see about an incremental job: its source, its outputs, its shaping. */
function incrementalIssues(
  job: { source: Source; incremental?: z.infer<typeof IncrementalSchema>; result?: z.infer<typeof ResultShapingSchema>; outputs: unknown[] },
  ctx: z.RefinementCtx,
): void {
  const inc = job.incremental!;
  const source = job.source;
  const issue = (path: PropertyKey[], message: string) => ctx.addIssue({ code: 'custom', path, message });
  if ('sql' in source) {
    if (!new RegExp(`\\{\\{\\s*${inc.parameter}\\s*\\}\\}`).test(source.sql)) {
      issue(['incremental', 'parameter'], `the sql has no {{${inc.parameter}}} placeholder to receive the cursor value; write e.g. "where ${inc.cursor} > {{${inc.parameter}}}"`);
    }
  } else if ('query_id' in source) {
    if (source.parameters?.[inc.parameter] !== undefined) issue(['source', 'parameters', inc.parameter], `set by incremental.parameter on each run: remove it here`);
  } else {
    issue(['incremental'], `needs a sql or query_id source (${'latest' in source ? 'latest reuses a stored result' : 'view_refresh refreshes a whole view'}: neither can take the cursor value)`);
  }
  if (inc.lookback !== undefined && inc.key === undefined) issue(['incremental', 'lookback'], 'rows read again are recognised by key: add key (the columns that identify a row)');
  const columns = job.result?.columns;
  if (columns) {
    const named: [PropertyKey[], string][] = [[['incremental', 'cursor'], inc.cursor], ...(inc.key ?? []).map((k, i): [PropertyKey[], string] => [['incremental', 'key', i], k])];
    for (const [path, column] of named) if (!columns.includes(column)) issue(path, `"${column}" is not among result.columns (${columns.join(', ')})`);
  }
  job.outputs.forEach((output, i) => {
    const o = output as { mode?: unknown; path?: unknown; table?: unknown };
    if (o.table === 'iceberg' && inc.key !== undefined) {
      issue(['incremental', 'key'], `outputs[${i}] is an Iceberg table, whose snapshot summary keeps the cursor but no window of keys: drop key (and lookback), or write that output as a manifest output`);
    }
    if (o.path === '-') issue(['outputs', i, 'path'], 'an incremental job keeps its cursor in each output\'s commit: stdout has none; write to a directory or bucket');
    else if (o.mode !== 'append') issue(['outputs', i, 'mode'], 'an incremental job adds each run\'s new rows to the output: set mode: append');
  });
}

type Issue = (path: PropertyKey[], message: string) => void;

/** What the schema of one field cannot see about a contract: its bounds against each other, its columns against result.columns. */
function expectIssues(expect: Expect, shaped: readonly string[] | undefined, ctx: z.RefinementCtx, base: PropertyKey[] = ['expect']): void {
  const issue: Issue = (path, message) => ctx.addIssue({ code: 'custom', path: [...base, ...path], message });
  const { rows } = expect;
  if (rows !== undefined && rows.min === undefined && rows.max === undefined) issue(['rows'], 'give min, max or both');
  if (rows?.min !== undefined && rows.max !== undefined && rows.min > rows.max) issue(['rows', 'min'], `min ${rows.min} is above max ${rows.max}`);
  for (const [name, type] of Object.entries(expect.columns ?? {})) {
    if (!typeKnown(type)) issue(['columns', name], `"${type}" is not a column type the service reports (e.g. bigint, double, varchar, decimal(18,2), timestamp, date, boolean)`);
  }
  for (const [name, check] of Object.entries(expect.checks ?? {})) checkIssues(check, shaped, (path, message) => issue(['checks', name, ...path], message));
  if (shaped === undefined) return;
  for (const part of ['columns', 'checks'] as const) {
    for (const name of Object.keys(expect[part] ?? {})) {
      if (!shaped.includes(name)) issue([part, name], `"${name}" is not among result.columns (${shaped.join(', ')}): it would never be fetched`);
    }
  }
}

/** One column's checks: at least one given, a predicate that parses and reads fetched columns, bounds in order. */
function checkIssues(check: ColumnCheck, shaped: readonly string[] | undefined, issue: Issue): void {
  const given = ['not_null', 'unique', 'accepted_values', 'min', 'max', 'predicate'].filter((k) => check[k as keyof ColumnCheck] !== undefined);
  if (given.length === 0) issue([], 'no check given: add not_null, unique, accepted_values, min, max or predicate');
  const problem = check.predicate === undefined ? undefined : predicateProblem(check.predicate);
  if (problem !== undefined) issue(['predicate'], problem);
  if (check.predicate !== undefined && problem === undefined && shaped !== undefined) {
    const missing = parsePredicate(check.predicate).columns.filter((c) => !shaped.includes(c));
    if (missing.length > 0) issue(['predicate'], `reads ${missing.join(', ')}, not among result.columns (${shaped.join(', ')})`);
  }
  if (typeof check.min === 'number' && typeof check.max === 'number' && check.min > check.max) issue(['min'], `min ${check.min} is above max ${check.max}`);
}

/**
 * Where a quarantining contract's rows go: beside each output it guards (every output for the job's
 * expect, its own for an output's), which needs a place beside it; an incremental job cannot keep
 * them apart; and one output's quarantine is fed by one contract.
 */
function quarantineIssues(job: { incremental?: unknown; outputs: readonly { path?: unknown; expect?: Expect | undefined }[]; expect?: Expect | undefined }, ctx: z.RefinementCtx): void {
  const jobWide = contractQuarantines(job.expect);
  const where = (expect: Expect | undefined, base: PropertyKey[]): PropertyKey[] => {
    // The on_violation that says quarantine: a column's own, else the contract's.
    const column = Object.entries(expect?.checks ?? {}).find(([, check]) => check.on_violation === 'quarantine')?.[0];
    return column === undefined ? [...base, 'on_violation'] : [...base, 'checks', column, 'on_violation'];
  };
  if (job.incremental !== undefined) {
    const i = job.outputs.findIndex((o) => contractQuarantines(o.expect));
    const at = jobWide || i === -1 ? where(job.expect, ['expect']) : where(job.outputs[i]!.expect, ['outputs', i, 'expect']);
    ctx.addIssue({ code: 'custom', path: at, message: 'quarantine is not supported with incremental: the rows set aside would be read again by the next run (their cursor is above the committed one); use fail or warn' });
  }
  const paths = job.outputs.map((o) => o.path);
  job.outputs.forEach((output, i) => {
    const own = contractQuarantines(output.expect);
    if (own && jobWide) {
      ctx.addIssue({ code: 'custom', path: where(output.expect, ['outputs', i, 'expect']), message: "the job's expect quarantines too, into the same place beside this output: keep the quarantining checks in one of the two" });
    }
    const path = output.path;
    if ((!own && !jobWide) || typeof path !== 'string') return;
    const problem = quarantinePathProblem(path);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', path: ['outputs', i, 'path'], message: `on_violation: quarantine writes the rows set aside beside each output, at its path + _quarantine: ${problem}` });
    const clash = paths.findIndex((other) => typeof other === 'string' && other.replace(/\/+$/, '') === quarantinePath(path));
    if (clash !== -1) ctx.addIssue({ code: 'custom', path: ['outputs', clash, 'path'], message: `is where outputs[${i}]'s quarantine goes (on_violation: quarantine writes beside each output at its path + _quarantine): move one of them` });
  });
}

function typeKnown(type: string): boolean {
  return parseType(type).kind !== 'unknown';
}

export const EmbeddedServiceSchema = z
  .strictObject({
    data_dir: z.string().min(1).optional().describe('Where the embedded service keeps its database (default ./.sluice/service)'),
    settings: z.string().min(1).optional().describe('A service settings file (YAML), read over the embedded defaults: it need only name what it changes (e.g. engine: { memory_limit: 1GiB }); config/service.yaml is a whole one'),
    sample_rows: z.number().int().nonnegative().optional().describe('Rows of sample.events: created with this many, or rebuilt when it holds another count (unset: 1,000,000 when created; an existing table is kept)'),
  })
  .describe('The local service started in-process when base_url is absent');

export const ConnectionSchema = z
  .strictObject({
    base_url: z
      .union([z.url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL, e.g. http://localhost:18080' }), z.literal('')])
      .optional()
      .describe('The service origin, e.g. https://api.example.com (with or without /api); absent or empty: start the embedded local service'),
    api_key_env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name')
      .optional()
      .describe('Name of the environment variable holding the API key (default SERVICE_API_KEY)'),
    embedded: EmbeddedServiceSchema.optional(),
    rate_limit: z
      .union([
        z.enum(RATE_PLAN_NAMES),
        z.strictObject({
          read: z.number().positive().optional().describe('Results, status, get and list requests per minute (the "high limit" class)'),
          write: z.number().positive().optional().describe('Execute, cancel and other change requests per minute (the "low limit" class)'),
        }),
      ])
      .optional()
      .describe(
        "The API key's request rate, which every page fetcher and status poll of this process shares (a shard of N takes 1/N): a plan name (free: 40 read / 15 write per minute, plus: 200 / 70, enterprise: 1000 / 350) or { read, write } requests per minute. Unset, or set too high: learned from the service's 429s and Retry-After",
      ),
    compression: z
      .enum(COMPRESSION_MODES)
      .optional()
      .describe('Whether to ask the service for compressed answers (zstd, br or gzip): auto (default) does, except for a service on this machine (a loopback address), where compressing costs more time than the bytes save; on and off force it. The native path asks for its CSV pages in zstd (handed to DuckDB undecoded) unless off'),
  })
  .describe('How to reach the service');
export type Connection = z.infer<typeof ConnectionSchema>;

function buildJobFileSchema(registry: Registry) {
  const output = withRunFields(outputConfigSchema(registry)).describe('One output: format, destination path, partitioning and rolling');
  return z
    .strictObject({
      version: z.literal(1).optional().describe('Job file format version (1)'),
      connection: ConnectionSchema.optional(),
      state_dir: z.string().min(1).optional().describe('Where run state for resume is kept (default ./.sluice/state); relative paths of a job file are relative to the folder sluice runs in, ${SLUICE_JOB_DIR} is the job file\'s folder'),
      jobs: z.array(jobSchema(output)).min(1).describe('The jobs of this file'),
    })
    .superRefine((file, ctx) => {
      const seen = new Map<string, number>();
      file.jobs.forEach((job, index) => {
        const first = seen.get(job.name);
        if (first !== undefined) {
          ctx.addIssue({ code: 'custom', path: ['jobs', index, 'name'], message: `duplicate job name "${job.name}" (also jobs[${first}].name)` });
        } else {
          seen.set(job.name, index);
        }
      });
    })
    .describe('A sluice job file');
}
/** A job file as the schema checked it, before its outputs are resolved. */
export type ParsedJobFile = z.infer<ReturnType<typeof buildJobFileSchema>>;
/** A job as loaded: its outputs resolved against the registry (format, sink, their options, every default). */
export type Job = Omit<ParsedJobFile['jobs'][number], 'outputs'> & { readonly outputs: readonly JobOutput[] };
/** A job's output: resolved, with its own contract when it has one. */
export type JobOutput = ResolvedOutput & { readonly expect?: Expect };
export type JobFile = Omit<ParsedJobFile, 'jobs'> & { readonly jobs: readonly Job[] };

const schemas = new WeakMap<Registry, ReturnType<typeof buildJobFileSchema>>();

/** The schema of job files whose outputs may use the formats and sinks of `registry` (built once per registry). */
export function jobFileSchema(registry: Registry): ReturnType<typeof buildJobFileSchema> {
  let schema = schemas.get(registry);
  if (schema === undefined) {
    schema = buildJobFileSchema(registry);
    schemas.set(registry, schema);
  }
  return schema;
}

export const DEFAULT_API_KEY_ENV = 'SERVICE_API_KEY';
export const DEFAULT_EMBEDDED_DATA_DIR = '.sluice/service';
export const DEFAULT_STATE_DIR = '.sluice/state';
