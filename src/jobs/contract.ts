import type { RecordBatch, Schema } from 'apache-arrow';
import { type ColumnCheck, type Expect, type Job, MAX_UNIQUE_VALUES } from '../config/jobSchema.ts';
import { ConfigError } from '../errors.ts';
import { valueText } from '../kit/index.ts';
import type { ExecutionStatus } from '../protocol/index.ts';
import { parseType } from '../types/parse.ts';
import { formatType } from '../types/sql-type.ts';
import { canonicalCursor, compareCursor, type CursorKind, cursorKind, cursorValueProblem } from './cursor.ts';
import { ContractViolationError } from './errors.ts';
import { columnData } from './incremental.ts';

/** One broken check of a run whose contract says `warn`: counted, its first violation kept. */
export interface ContractWarning {
  /** The contract field, e.g. `expect.checks.amount.not_null`. */
  readonly check: string;
  readonly column?: string;
  /** Rows that broke it (1 for the columns and the row count). */
  count: number;
  /** The first violation, as it was logged. */
  readonly first: string;
}

type Warn = ((message: string, fields: Record<string, unknown>) => void) | undefined;

/**
 * A job's `expect` contract over one run: what can be checked from the execution's metadata before
 * any page is fetched (`beforeFetch`: the columns, the row count the service reports), and what
 * only the rows can tell (`watch`: the column checks, the row count of a filtered result). A `fail`
 * violation throws, which fails the read and so every output before it commits; a `warn` one is
 * logged once per check and counted in `warnings`.
 */
export class RunContract {
  readonly #job: Job;
  readonly #expect: Expect;
  readonly #warn: Warn;
  readonly #warnings = new Map<string, ContractWarning>();
  readonly #maxUnique: number;
  #rowsChecked = false;

  /** `maxUnique`: distinct values a `unique` check may hold (MAX_UNIQUE_VALUES; lower in tests of the limit). */
  constructor(job: Job, warn: Warn, maxUnique = MAX_UNIQUE_VALUES) {
    this.#job = job;
    this.#expect = job.expect ?? {};
    this.#warn = warn;
    this.#maxUnique = maxUnique;
  }

  /** The broken checks a `warn` contract let through, in the order they were first seen. */
  get warnings(): ContractWarning[] {
    return [...this.#warnings.values()];
  }

  /** Whether the rows must be read by this thread, through `watch` (part threads do not pass through it). */
  get watchesRows(): boolean {
    return this.#expect.checks !== undefined || (this.#expect.rows !== undefined && this.#job.result?.filters !== undefined);
  }

  /** The columns and types, the row count when the service reports it, and that every checked column exists with an order for min/max. */
  beforeFetch(status: ExecutionStatus): void {
    const metadata = status.result_metadata;
    const names = metadata?.column_names ?? [];
    const types = metadata?.column_types ?? [];
    const columns = this.#expect.columns ?? {};
    if (Object.keys(columns).length > 0 && metadata === undefined) {
      this.#violated({ check: 'expect.columns', problem: 'the execution reported no result metadata (column_types), so the columns cannot be checked before fetching' });
    }
    for (const [name, type] of Object.entries(columns)) {
      const at = names.indexOf(name);
      if (at === -1) this.#violated({ check: `expect.columns.${name}`, column: name, problem: `no column ${name} in the result (columns: ${describe(names, types)})` });
      else if (!sameType(type, types[at] ?? '')) this.#violated({ check: `expect.columns.${name}`, column: name, value: types[at], problem: `column ${name} is ${types[at]}, expected ${type}` });
    }
    for (const [name, check] of Object.entries(this.#expect.checks ?? {})) {
      const at = names.indexOf(name);
      if (metadata !== undefined && at === -1) this.#violated({ check: `expect.checks.${name}`, column: name, problem: `no column ${name} in the result to check (columns: ${describe(names, types)})` });
      if (at !== -1) orderOf(this.#job.name, name, check, types[at]!);
    }
    const total = metadata?.total_row_count;
    if (this.#job.result?.filters === undefined && total !== undefined) this.#checkRows(total, 'the service reports');
  }

  /** The batches of the read starting at row `startRow` (0-based), every row checked; the row count checked when they end. */
  async *watch(batches: AsyncIterable<RecordBatch>, schema: Schema, startRow: number): AsyncGenerator<RecordBatch, void, undefined> {
    const checks = Object.entries(this.#expect.checks ?? {}).map(([name, check]) => this.#columnWatch(name, check, schema));
    let row = startRow;
    for await (const batch of batches) {
      for (const watch of checks) watch(batch, row);
      row += batch.numRows;
      yield batch;
    }
    // Before the end reaches the outputs: a count out of range fails the read, so nothing commits.
    if (!this.#rowsChecked) this.#checkRows(row, 'the run read');
  }

  #checkRows(total: number, source: string): void {
    this.#rowsChecked = true;
    const rows = this.#expect.rows;
    if (rows?.min !== undefined && total < rows.min) this.#violated({ check: 'expect.rows.min', value: total, problem: `${source} ${total} rows, fewer than min ${rows.min}` });
    if (rows?.max !== undefined && total > rows.max) this.#violated({ check: 'expect.rows.max', value: total, problem: `${source} ${total} rows, more than max ${rows.max}` });
  }

  /** One column's checks as a function of a batch and the result row its first row is. */
  #columnWatch(name: string, check: ColumnCheck, schema: Schema): (batch: RecordBatch, first: number) => void {
    const field = schema.fields.find((f) => f.name === name);
    if (field === undefined) throw new ContractViolationError(this.#job.name, { check: `expect.checks.${name}`, column: name, problem: `no column ${name} in the result to check` });
    const reader = valueText(field);
    const type = field.metadata.get('service.type') ?? String(field.type);
    const kind = orderOf(this.#job.name, name, check, type);
    const tests = rowTests(check, kind);
    const seen = check.unique === true ? new Set<string>() : undefined;
    const on = check.on_violation ?? this.#expect.on_violation ?? 'fail';
    const at = `expect.checks.${name}`;
    return (batch, first) => {
      const data = columnData(batch, name);
      for (let i = 0; i < batch.numRows; i++) {
        const value = data.text(i, reader);
        const row = first + i + 1;
        for (const [test, problem] of tests) if (!test(value)) this.#violated({ check: `${at}.${test.name}`, column: name, row, value, problem: `row ${row} of the result: ${name} is ${shown(value)}, ${problem}` }, on);
        if (seen === undefined || value === null) continue;
        if (seen.has(value)) this.#violated({ check: `${at}.unique`, column: name, row, value, problem: `row ${row} of the result: ${name} ${shown(value)} appeared before in this run` }, on);
        else if (seen.size >= this.#maxUnique) {
          throw new ContractViolationError(this.#job.name, { check: `${at}.unique`, column: name, row, problem: `more than ${this.#maxUnique.toLocaleString('en-US')} distinct values of ${name}: the check holds them in memory and stops there; check uniqueness in the query instead (count(distinct ${name}) = count(*))` });
        } else seen.add(value);
      }
    };
  }

  #violated(violation: { check: string; column?: string; row?: number; value?: unknown; problem: string }, on = this.#expect.on_violation ?? 'fail'): void {
    if (on !== 'warn') throw new ContractViolationError(this.#job.name, violation);
    const known = this.#warnings.get(violation.check);
    if (known !== undefined) {
      known.count++;
      return;
    }
    this.#warnings.set(violation.check, { check: violation.check, ...(violation.column === undefined ? {} : { column: violation.column }), count: 1, first: violation.problem });
    this.#warn?.(`contract broken (on_violation: warn, published anyway; later violations of this check are counted, not logged): ${violation.check}: ${violation.problem}`, { job: this.#job.name, check: violation.check });
  }
}

type RowTest = [test: (value: string | null) => boolean, problem: string];

/** The per-row tests of a column's checks, each a function named after its check (the name goes into the violation). */
function rowTests(check: ColumnCheck, kind: CursorKind | undefined): RowTest[] {
  const tests: RowTest[] = [];
  if (check.not_null === true) tests.push([named('not_null', (v) => v !== null), 'expected a value (not_null)']);
  const accepted = check.accepted_values;
  if (accepted !== undefined) {
    const numeric = kind === 'integer' || kind === 'decimal' || kind === 'float';
    const texts = new Set(accepted.map(String));
    const isAccepted = numeric ? (v: string) => accepted.some((a) => typeof a !== 'boolean' && cursorValueProblem(kind, a) === undefined && compareCursor(kind, v, String(a)) === 0) : (v: string) => texts.has(v);
    tests.push([named('accepted_values', (v) => v === null || isAccepted(v)), `not one of accepted_values ${JSON.stringify(accepted)}`]);
  }
  if (check.min !== undefined && kind !== undefined) {
    const min = canonicalCursor(kind, check.min);
    tests.push([named('min', (v) => v === null || compareCursor(kind, v, min) >= 0), `below min ${check.min}`]);
  }
  if (check.max !== undefined && kind !== undefined) {
    const max = canonicalCursor(kind, check.max);
    tests.push([named('max', (v) => v === null || compareCursor(kind, v, max) <= 0), `above max ${check.max}`]);
  }
  return tests;
}

function named<T extends (...args: never[]) => unknown>(name: string, fn: T): T {
  return Object.defineProperty(fn, 'name', { value: name });
}

/** The order min/max compare a column's values in; a type without one, or a bound of another type, is a mistake in the job. */
function orderOf(job: string, column: string, check: ColumnCheck, type: string): CursorKind | undefined {
  const kind = cursorKind(type);
  for (const bound of ['min', 'max'] as const) {
    const value = check[bound];
    if (value === undefined) continue;
    const path = `expect.checks.${column}.${bound}`;
    if (kind === undefined) throw new ConfigError(`job ${job}: ${path}: column ${column} is ${type}, which has no order: min and max apply to numbers, decimals, dates, timestamps and text`, { issues: [{ path, message: `${type} has no order`, value }] });
    const problem = cursorValueProblem(kind, value);
    if (problem) throw new ConfigError(`job ${job}: ${path} ${JSON.stringify(value)}: column ${column} is ${type}: ${problem}`, { issues: [{ path, message: problem, value }] });
  }
  return kind;
}

/** Whether two `column_types` spellings name one type (case and spaces aside). */
function sameType(expected: string, actual: string): boolean {
  const canonical = (t: string) => formatType(parseType(t)).toLowerCase().replace(/\s+/g, '');
  return canonical(expected) === canonical(actual);
}

function describe(names: readonly string[], types: readonly string[]): string {
  return names.map((n, i) => `${n} ${types[i] ?? '?'}`).join(', ');
}

function shown(value: string | null): string {
  return value === null ? 'NULL' : JSON.stringify(value);
}
