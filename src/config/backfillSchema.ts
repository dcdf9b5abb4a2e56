import { z } from 'zod';
import { boundKind, chunkPoints, chunksOf, defaultFloor, type RangeAxis, type RangeKind, rangeKind, toPoint } from './backfillRange.ts';

/** Chunk executions at once, at most: beyond a plan's concurrent executions they only queue. */
export const MAX_BACKFILL_CONCURRENCY = 16;
/** Chunks one backfill may cut: the run state records each, and each is an execution. */
export const MAX_BACKFILL_CHUNKS = 10_000;

const ParameterName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'a parameter name: letters, digits and _');
const BoundValue = z.union([z.string().min(1), z.number()]);

export const BackfillSchema = z
  .strictObject({
    parameters: z
      .strictObject({
        from: ParameterName.describe("Receives each chunk's first value (inclusive): a saved query parameter, or a {{name}} placeholder in sql"),
        to: ParameterName.describe("Receives each chunk's end (exclusive): write the query as `col >= {{from}} and col < {{to}}`"),
      })
      .describe('The query parameters (or {{placeholders}}) that receive the bounds of each chunk'),
    from: BoundValue.describe('Where the backfill starts (inclusive): an integer, a date (2024-01-01) or a UTC timestamp (2024-01-01 06:00:00)'),
    to: BoundValue.describe('Where it ends (exclusive), of the same kind as from'),
    chunk: BoundValue.describe('The range of one execution: a number of values for integer bounds (1000000), a duration for dates and timestamps (7d, 12h, 30m, 2w; whole days for dates)'),
    concurrency: z
      .number()
      .int()
      .min(1)
      .max(MAX_BACKFILL_CONCURRENCY)
      .optional()
      .describe("Chunk executions running at once (default 2); never more than the team's concurrent executions (max_inflight), which the service reports"),
    min_chunk: BoundValue.optional().describe(
      'A chunk whose result comes back truncated (COMPLETED_PARTIAL) or whose execution times out is halved and run again, down to this size (default: the chunk halved six times, at least one value, day or second); below it the run fails naming the range',
    ),
  })
  .describe(
    'Read a range too large for one execution in chunks: one execution per chunk, a few at once, each fetched and retried on its own, all committed once (one manifest or snapshot per output); a killed run resumes without executing a finished chunk again. With incremental, the backfill is the first run (while no output holds a cursor) and commits the cursor; the runs after it read from the cursor on, with no upper bound',
  );
export type Backfill = z.infer<typeof BackfillSchema>;

/** The backfill's axis, when its bounds and chunk size are valid (the schema reports them otherwise). */
export function backfillAxis(backfill: Backfill): RangeAxis | undefined {
  const from = boundKind(backfill.from);
  const to = boundKind(backfill.to);
  if (typeof from !== 'string' || typeof to !== 'string') return undefined;
  const kind = rangeKind(from, to);
  if (kind === undefined) return undefined;
  const chunk = chunkPoints(kind, backfill.chunk, 'from and to');
  if (typeof chunk !== 'bigint') return undefined;
  const floor = backfill.min_chunk === undefined ? undefined : chunkPoints(kind, backfill.min_chunk, 'from and to');
  if (floor !== undefined && typeof floor !== 'bigint') return undefined;
  const axis = { kind, from: toPoint(kind, backfill.from), to: toPoint(kind, backfill.to), chunk };
  return { ...axis, floor: floor ?? defaultFloor(kind, chunk) };
}

type Issue = (path: PropertyKey[], message: string) => void;

interface BackfillJob {
  readonly source: unknown;
  readonly backfill?: Backfill | undefined;
  readonly incremental?: { readonly parameter: string; readonly initial: string | number } | undefined;
  readonly result?: { readonly filters?: string | undefined } | undefined;
}

/** What the schema of one field cannot see about a backfill: its bounds against each other, its parameters against the source. */
export function backfillIssues(job: BackfillJob, ctx: z.RefinementCtx): void {
  const bf = job.backfill!;
  const issue = (path: PropertyKey[], message: string) => ctx.addIssue({ code: 'custom', path: ['backfill', ...path], message });
  const from = boundKind(bf.from);
  const to = boundKind(bf.to);
  if (typeof from !== 'string') issue(['from'], from.problem);
  if (typeof to !== 'string') issue(['to'], to.problem);
  if (typeof from === 'string' && typeof to === 'string') rangeIssues(bf, from, to, issue);
  if (bf.parameters.from === bf.parameters.to) issue(['parameters', 'to'], `the same parameter as parameters.from: each bound needs its own`);
  const atRoot: Issue = (path, message) => ctx.addIssue({ code: 'custom', path, message });
  sourceIssues(job, bf, issue, atRoot);
  if (job.incremental !== undefined) incrementalOverlap(bf, job.incremental, atRoot);
  if (job.result?.filters !== undefined) issue([], 'result.filters counts no rows up front, and a backfill resumes by row offsets across its chunks: filter in the query instead');
}

/**
 * A backfill with an incremental cursor is one job's first load: a run that finds no committed
 * cursor is the backfill, and the runs after it read from the cursor on. Both go through one
 * query, so the cursor goes where a chunk's first value goes, and both start at the same value.
 */
function incrementalOverlap(bf: Backfill, inc: NonNullable<BackfillJob['incremental']>, atRoot: Issue): void {
  if (inc.parameter !== bf.parameters.from) {
    atRoot(['incremental', 'parameter'], `a backfill's later runs pass the cursor where each chunk's first value goes: use backfill.parameters.from ("${bf.parameters.from}") here`);
  }
  if (String(inc.initial).trim() !== String(bf.from).trim()) {
    atRoot(['incremental', 'initial'], `the first run of this job is the backfill, which starts at backfill.from ${JSON.stringify(bf.from)}: give the same value here (the ranges would overlap or leave a gap)`);
  }
}

function rangeIssues(bf: Backfill, from: RangeKind, to: RangeKind, issue: Issue): void {
  const kind = rangeKind(from, to);
  if (kind === undefined) {
    issue(['to'], `${JSON.stringify(bf.to)} is ${article(to)} and from ${JSON.stringify(bf.from)} is ${article(from)}: give both bounds of one kind`);
    return;
  }
  const chunk = chunkPoints(kind, bf.chunk, 'from and to');
  if (typeof chunk !== 'bigint') issue(['chunk'], chunk.problem);
  const floor = bf.min_chunk === undefined ? undefined : chunkPoints(kind, bf.min_chunk, 'from and to');
  if (floor !== undefined && typeof floor !== 'bigint') issue(['min_chunk'], floor.problem);
  if (typeof floor === 'bigint' && typeof chunk === 'bigint' && floor > chunk) issue(['min_chunk'], `${JSON.stringify(bf.min_chunk)} is larger than chunk ${JSON.stringify(bf.chunk)}`);
  const start = toPoint(kind, bf.from);
  const end = toPoint(kind, bf.to);
  if (end <= start) {
    issue(['to'], `${JSON.stringify(bf.to)} is not after from ${JSON.stringify(bf.from)}: the range is [from, to)`);
    return;
  }
  if (typeof chunk !== 'bigint') return;
  const count = (end - start + chunk - 1n) / chunk;
  if (count > BigInt(MAX_BACKFILL_CHUNKS)) issue(['chunk'], `cuts the range into ${count} chunks, more than ${MAX_BACKFILL_CHUNKS}: take larger chunks`);
  else if (count > 0n && chunksOf({ kind, from: start, to: end, chunk, floor: chunk }).length === 0) issue(['chunk'], 'cuts no chunk');
}

function article(kind: RangeKind): string {
  return kind === 'integer' ? 'an integer' : `a ${kind}`;
}

function sourceIssues(job: BackfillJob, bf: Backfill, issue: Issue, atRoot: Issue): void {
  const source = job.source as { sql?: string; query_id?: number; parameters?: Record<string, unknown> };
  const names = [
    ['from', bf.parameters.from],
    ['to', bf.parameters.to],
  ] as const;
  if (typeof source.sql === 'string') {
    for (const [bound, name] of names) {
      if (!new RegExp(`\\{\\{\\s*${name}\\s*\\}\\}`).test(source.sql)) issue(['parameters', bound], `the sql has no {{${name}}} placeholder to receive each chunk's ${bound === 'from' ? 'first value' : 'end'}`);
    }
  } else if (typeof source.query_id === 'number') {
    for (const [, name] of names) {
      if (source.parameters?.[name] !== undefined) atRoot(['source', 'parameters', name], 'set by backfill.parameters on each chunk: remove it here');
    }
  } else {
    issue([], `needs a sql or query_id source: ${'latest' in (job.source as object) ? 'latest reuses a stored result' : 'view_refresh refreshes a whole view'}, neither takes a range`);
  }
}

/** What a backfill job's incremental runs pass as the range's end: no upper bound, in a value every engine reads. */
const OPEN_END: Record<RangeKind, string> = { integer: String(Number.MAX_SAFE_INTEGER), date: '9999-12-31', timestamp: '9999-12-31 23:59:59' };

/** An incremental run of a backfill job (after the backfill): its `to` parameter, and the open end it receives. */
export function openEnd(backfill: Backfill): { readonly name: string; readonly value: string | number; readonly sql: string } {
  const kind = backfillAxis(backfill)!.kind;
  const text = OPEN_END[kind];
  return { name: backfill.parameters.to, value: kind === 'integer' ? Number(text) : text, sql: kind === 'integer' ? text : `'${text}'` };
}
