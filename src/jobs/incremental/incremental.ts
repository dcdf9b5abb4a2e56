import type { Data, RecordBatch, Schema } from 'apache-arrow';
import type { ServiceClient } from '../../client/service-client.ts';
import type { Job } from '../../config/jobSchema.ts';
import type { Commit, CursorState } from '../../export/commit.ts';
import { valueText } from '../../kit/index.ts';
import {
  canonicalCursor,
  compareCursor,
  type CursorKind,
  cursorKind,
  cursorValueProblem,
  lookbackProblem,
  lookbackStart,
  ORDERABLE,
  sqlLiteral,
} from './cursor.ts';
import { CursorError } from '../errors.ts';
import { type CursorArgument, sourceInfo } from '../run/jobSource.ts';

type Incremental = NonNullable<Job['incremental']>;

/** Rows of the lookback window a commit may record; past it the run fails rather than hold more in memory. */
export const MAX_WINDOW_ROWS = 1_000_000;

/**
 * Where an incremental run starts, decided before any execution: each output's committed cursor
 * (read from its commit), the value the query receives (the lowest of them, less the lookback; the
 * initial value while an output has none), and the column's kind when a commit already knows it.
 */
export interface CursorPlan {
  readonly job: string;
  readonly incremental: Incremental;
  /** Per output (job order): its committed cursor, undefined when it holds none yet. */
  readonly committed: readonly (CursorState | undefined)[];
  readonly kind: CursorKind | undefined;
  readonly argument: CursorArgument;
  /** The committed value the run starts after (the lowest over the outputs), null while an output has none (the run reads from `initial`). */
  readonly from: string | null;
}

const field = (name: keyof Incremental | string): string => `incremental.${name}`;

/**
 * Plans the run from the outputs' commits, checking everything that can be checked before an
 * execution is started: commits that record another cursor column, an initial value or a lookback
 * that does not fit the column's kind, a saved query without the parameter or whose parameter type
 * the initial value does not fit.
 */
export async function planCursor(job: Job, commits: readonly (Commit | undefined)[], client: ServiceClient, signal: AbortSignal): Promise<CursorPlan> {
  const inc = job.incremental!;
  const committed = commits.map((c) => c?.cursor);
  let kind: CursorKind | undefined;
  committed.forEach((state, i) => {
    if (state === undefined) return;
    if (state.column !== inc.cursor) {
      throw new CursorError(job.name, field('cursor'), inc.cursor, `outputs[${i}] (${job.outputs[i]!.path}) committed its rows with the cursor column "${state.column}"; keep that cursor, or write to a new path`);
    }
    const k = cursorKind(state.type);
    if (k === undefined) throw new CursorError(job.name, field('cursor'), inc.cursor, `its committed type ${state.type} cannot be ordered (expected ${ORDERABLE})`);
    kind ??= k;
  });
  if (kind !== undefined) checkKind(job, kind, committed.find((s) => s !== undefined)!.type);
  const source = sourceInfo(job);
  if (source.kind === 'query') await checkSavedQuery(job, source.queryId!, client, signal);

  const starts = committed.map((state) => (state === undefined ? undefined : lookbackStart(kind!, state.value, inc.lookback)));
  const missing = starts.some((s) => s === undefined);
  const lowest = missing ? undefined : (starts as string[]).reduce((a, b) => (compareCursor(kind!, a, b) <= 0 ? a : b));
  const value: string | number = lowest ?? (kind === undefined ? inc.initial : canonicalCursor(kind, inc.initial));
  // Null while an output holds no cursor yet: the run reads from the initial value.
  const from = missing ? null : (committed as CursorState[]).map((c) => c.value).reduce((a, b) => (compareCursor(kind!, a, b) <= 0 ? a : b));
  return { job: job.name, incremental: inc, committed, kind, argument: { value, sql: sqlLiteral(kind, value) }, from };
}

/** The initial value and the lookback against the cursor's kind. */
function checkKind(job: Job, kind: CursorKind, type: string): void {
  const inc = job.incremental!;
  const bad = cursorValueProblem(kind, inc.initial);
  if (bad) throw new CursorError(job.name, field('initial'), inc.initial, `does not parse as the cursor column's type ${type}: ${bad}`);
  if (inc.lookback !== undefined) {
    const problem = lookbackProblem(kind, inc.lookback);
    if (problem) throw new CursorError(job.name, field('lookback'), inc.lookback, problem);
  }
}

/** The saved query must declare the parameter, with a type the initial value fits. */
async function checkSavedQuery(job: Job, queryId: number, client: ServiceClient, signal: AbortSignal): Promise<void> {
  const inc = job.incremental!;
  const query = await client.getQuery(queryId, { signal });
  const declared = query.parameters?.find((p) => p.key === inc.parameter);
  if (declared === undefined) {
    const names = (query.parameters ?? []).map((p) => p.key);
    throw new CursorError(job.name, field('parameter'), inc.parameter, `saved query ${queryId} has no such parameter (it has ${names.length === 0 ? 'none' : names.join(', ')})`);
  }
  const kind: CursorKind | undefined = declared.type === 'number' ? 'decimal' : declared.type === 'datetime' ? 'timestamp' : undefined;
  const bad = kind === undefined ? undefined : cursorValueProblem(kind, inc.initial);
  if (bad) throw new CursorError(job.name, field('initial'), inc.initial, `does not fit the ${declared.type} parameter "${inc.parameter}" of saved query ${queryId}: ${bad}`);
}

/**
 * Before a first commit the cursor's type is unknown, so the initial value goes into the query as
 * written: an execution that failed on it (the engine could not convert it) is that value's fault,
 * and is reported as such, with the engine's words.
 */
export function explainInitial(plan: CursorPlan, error: unknown): unknown {
  const initial = String(plan.incremental.initial);
  const engine = (error as { code?: unknown } | null)?.code === 'EXECUTION_FAILED' ? (error as Error).message : undefined;
  if (plan.from !== null || engine === undefined || !engine.includes(initial)) return error;
  const said = engine.replace(/^.*?execution failed: /, '').split('\n')[0]!;
  const problem = new CursorError(plan.job, field('initial'), plan.incremental.initial, `the query could not use it as a value of the cursor column ${plan.incremental.cursor} (${said}); give a value of the column's type`);
  return Object.defineProperty(problem, 'cause', { value: error, enumerable: false, configurable: true });
}

/**
 * Checks the result's columns once the execution has finished, before a page is fetched: the cursor
 * (and key) columns exist, the cursor can be ordered, and the initial value parses as its type.
 * Returns the cursor's kind.
 */
export function checkResultColumns(plan: CursorPlan, names: readonly string[], types: readonly string[]): CursorKind {
  const inc = plan.incremental;
  const at = names.indexOf(inc.cursor);
  if (at === -1) throw new CursorError(plan.job, field('cursor'), inc.cursor, `no such column in the result (columns: ${names.join(', ')})`);
  for (const [i, key] of (inc.key ?? []).entries()) {
    if (!names.includes(key)) throw new CursorError(plan.job, `${field('key')}[${i}]`, key, `no such column in the result (columns: ${names.join(', ')})`);
  }
  const type = types[at]!;
  const kind = cursorKind(type);
  if (kind === undefined) throw new CursorError(plan.job, field('cursor'), inc.cursor, `its type ${type} cannot be ordered: use ${ORDERABLE}`);
  if (plan.kind !== undefined && plan.kind !== kind) {
    const was = plan.committed.find((s) => s !== undefined)!.type;
    throw new CursorError(plan.job, field('cursor'), inc.cursor, `was ${was} in the committed output and is ${type} in this result; cast it back in the query, or write to a new path`);
  }
  const bad = cursorValueProblem(kind, inc.initial);
  if (bad) throw new CursorError(plan.job, field('initial'), inc.initial, `does not parse as the cursor column's type ${type}: ${bad}`);
  if (inc.lookback !== undefined) {
    const problem = lookbackProblem(kind, inc.lookback);
    if (problem) throw new CursorError(plan.job, field('lookback'), inc.lookback, problem);
  }
  return kind;
}

/**
 * One output's view of the rows: drops those its commit already holds and tracks the high-water
 * mark (and the lookback window) of those it keeps, for the commit. Rows already committed are:
 * below the window; with `key`, those whose key the commit's window lists; without `key`, those at or
 * below the committed value. Every row's cursor must be non-NULL.
 */
export class OutputCursor {
  readonly #plan: CursorPlan;
  readonly #kind: CursorKind;
  readonly #type: string;
  readonly #committed: CursorState | undefined;
  readonly #start: string | undefined;
  readonly #seen: Set<string> | undefined;
  #max: string | undefined;
  /** [cursor, key] of kept rows (and the committed window's) that may still be within the new window. */
  #window: [string, string][] = [];
  #row = 0;

  constructor(plan: CursorPlan, kind: CursorKind, type: string, output: number) {
    this.#plan = plan;
    this.#kind = kind;
    this.#type = type;
    this.#committed = plan.committed[output];
    const inc = plan.incremental;
    this.#start = this.#committed === undefined ? undefined : lookbackStart(kind, this.#committed.value, inc.lookback);
    if (inc.key !== undefined) {
      const window = this.#committed?.window ?? [];
      this.#seen = new Set(window.map(([, key]) => key));
      this.#window = window.map(([c, k]) => [c, k]);
    }
  }

  /** The batches without the rows the output holds already. */
  async *filter(batches: AsyncIterable<RecordBatch>): AsyncIterable<RecordBatch> {
    const inc = this.#plan.incremental;
    for await (const batch of batches) {
      const cursorData = columnData(batch, inc.cursor);
      const cursorText = valueText(batch.schema.fields.find((f) => f.name === inc.cursor)!);
      const keys = inc.key?.map((name) => ({ data: columnData(batch, name), text: valueText(batch.schema.fields.find((f) => f.name === name)!) }));
      const runs: [number, number][] = [];
      for (let i = 0; i < batch.numRows; i++) {
        const raw = cursorData.text(i, cursorText);
        if (raw === null) {
          throw new CursorError(this.#plan.job, field('cursor'), inc.cursor, `is NULL in row ${this.#row + i} of the result: a cursor must have a value in every row (filter the NULLs out, or COALESCE them)`);
        }
        const value = canonicalCursor(this.#kind, raw);
        if (this.#kind === 'float' && !Number.isFinite(Number(value))) {
          throw new CursorError(this.#plan.job, field('cursor'), inc.cursor, `is ${value} in row ${this.#row + i} of the result: a cursor must be a finite number to be ordered (filter it out)`);
        }
        const key = keys === undefined ? undefined : JSON.stringify(keys.map((k) => k.data.text(i, k.text)));
        if (!this.#keeps(value, key)) continue;
        const last = runs.at(-1);
        if (last !== undefined && last[1] === i) last[1] = i + 1;
        else runs.push([i, i + 1]);
        this.#track(value, key);
      }
      this.#row += batch.numRows;
      if (runs.length === 1 && runs[0]![0] === 0 && runs[0]![1] === batch.numRows) yield batch;
      else for (const [from, to] of runs) yield batch.slice(from, to);
    }
  }

  /** The state to commit with the kept rows. */
  state(): CursorState {
    const inc = this.#plan.incremental;
    const committed = this.#committed?.value;
    const value = this.#max ?? committed ?? canonicalCursor(this.#kind, inc.initial);
    const state: CursorState = { column: inc.cursor, type: this.#type, value };
    if (inc.key === undefined) return state;
    const start = lookbackStart(this.#kind, value, inc.lookback);
    return { ...state, window: this.#window.filter(([c]) => compareCursor(this.#kind, c, start) >= 0) };
  }

  #keeps(value: string, key: string | undefined): boolean {
    if (this.#committed === undefined) return true;
    if (compareCursor(this.#kind, value, this.#start!) < 0) return false;
    if (this.#seen !== undefined) return !this.#seen.has(key!);
    return compareCursor(this.#kind, value, this.#committed.value) > 0;
  }

  #track(value: string, key: string | undefined): void {
    if (this.#max === undefined || compareCursor(this.#kind, value, this.#max) > 0) this.#max = value;
    if (key === undefined) return;
    // Only the committed window's keys are looked up (#seen): this run's own keys are kept for the
    // next commit's window, pruned to it as the high-water mark rises, so memory stays that window.
    this.#window.push([value, key]);
    if (this.#window.length > 2 * 65_536 && this.#window.length % 65_536 === 0) {
      // What falls below the window of the highest value so far can never be in the final one.
      const start = lookbackStart(this.#kind, this.#max, this.#plan.incremental.lookback);
      this.#window = this.#window.filter(([c]) => compareCursor(this.#kind, c, start) >= 0);
      if (this.#window.length > MAX_WINDOW_ROWS) {
        throw new CursorError(this.#plan.job, field('lookback'), this.#plan.incremental.lookback ?? null, `the window holds more than ${MAX_WINDOW_ROWS.toLocaleString('en-US')} rows, each of whose keys the commit would record: shorten the lookback`);
      }
    }
  }
}

/** A column of a batch with its text reader bound. */
export function columnData(batch: RecordBatch, name: string): { text(i: number, reader: ReturnType<typeof valueText>): string | null } {
  const vector = batch.getChild(name);
  if (vector === null) throw new Error(`column ${name} is not in the batch`);
  const chunks = vector.data as Data[];
  return {
    text(i, reader) {
      let index = i;
      for (const data of chunks) {
        if (index < data.length) return reader.text(data, index);
        index -= data.length;
      }
      return null;
    },
  };
}

/** The schema's service type of a column. */
export function serviceType(schema: Schema, column: string): string {
  const f = schema.fields.find((x) => x.name === column);
  return f?.metadata.get('service.type') ?? String(f?.type);
}
