import type { RecordBatch, Schema } from 'apache-arrow';
import { type ColumnCheck, contractQuarantines, type Expect, type Job, MAX_UNIQUE_VALUES } from '../../config/jobSchema.ts';
import { ConfigError } from '../../errors.ts';
import { valueText } from '../../kit/index.ts';
import type { ExecutionStatus } from '../../protocol/index.ts';
import { parseType } from '../../types/parse.ts';
import { formatType } from '../../types/sqlType.ts';
import { canonicalCursor, compareCursor, type CursorKind, cursorKind, cursorValueProblem } from '../incremental/cursor.ts';
import { ContractViolationError } from '../errors.ts';
import { QUARANTINE_COLUMNS, type QuarantineFeed, quarantineSplitter } from './contractQuarantine.ts';
import { PredicateError, parsePredicate } from '../../config/predicate.ts';
import { bindPredicate } from './contractPredicate.ts';
import { columnData } from '../incremental/incremental.ts';

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

type Violation = { check: string; column?: string; row?: number; value?: unknown; problem: string };

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
  /** Where the contract is in the job, as check names start: `expect`, or `outputs[1].expect`. */
  readonly #at: string;
  readonly #warn: Warn;
  readonly #warnings = new Map<string, ContractWarning>();
  readonly #quarantined = new Map<string, ContractWarning>();
  readonly #maxUnique: number;
  #rowsChecked = false;
  #feed: QuarantineFeed | undefined;

  /**
   * `maxUnique`: distinct values a `unique` check may hold (MAX_UNIQUE_VALUES; lower in tests of the
   * limit). `output`: the contract of the job's output at that index (its own expect), instead of the job's.
   */
  constructor(job: Job, warn: Warn, maxUnique = MAX_UNIQUE_VALUES, output?: number) {
    this.#job = job;
    this.#expect = (output === undefined ? job.expect : job.outputs[output]?.expect) ?? {};
    this.#at = output === undefined ? 'expect' : `outputs[${output}].expect`;
    this.#warn = warn;
    this.#maxUnique = maxUnique;
  }

  /** The broken checks a `warn` contract let through, in the order they were first seen. */
  get warnings(): ContractWarning[] {
    return [...this.#warnings.values()];
  }

  /** The checks that set rows aside (`quarantine`), with how many rows each set aside and the first. */
  get quarantined(): ContractWarning[] {
    return [...this.#quarantined.values()];
  }

  /** Whether some check sets its violating rows aside: the outputs then hold fewer rows than the result. */
  get quarantines(): boolean {
    return contractQuarantines(this.#expect);
  }

  /** Whether the rows must be read by this thread, through `watch` (the native path's range reads do not pass through it). */
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
      this.#violated({ check: `${this.#at}.columns`, problem: 'the execution reported no result metadata (column_types), so the columns cannot be checked before fetching' });
    }
    for (const [name, type] of Object.entries(columns)) {
      const at = names.indexOf(name);
      if (at === -1) this.#violated({ check: `${this.#at}.columns.${name}`, column: name, problem: `no column ${name} in the result (columns: ${describe(names, types)})` });
      else if (!sameType(type, types[at] ?? '')) this.#violated({ check: `${this.#at}.columns.${name}`, column: name, value: types[at], problem: `column ${name} is ${types[at]}, expected ${type}` });
    }
    for (const [name, check] of Object.entries(this.#expect.checks ?? {})) {
      const at = names.indexOf(name);
      if (metadata !== undefined && at === -1) this.#violated({ check: `${this.#at}.checks.${name}`, column: name, problem: `no column ${name} in the result to check (columns: ${describe(names, types)})` });
      if (at !== -1) orderOf(this.#job.name, `${this.#at}.checks.${name}`, name, check, types[at]!);
      if (metadata !== undefined && check.predicate !== undefined) this.#bindPredicate(name, check.predicate, new Map(names.map((n, i) => [n, types[i] ?? ''])));
    }
    const taken = this.quarantines ? names.filter((n) => (QUARANTINE_COLUMNS as readonly string[]).includes(n)) : [];
    if (taken.length > 0) {
      const path = `${this.#at}.on_violation`;
      const message = `the result has a column ${taken.join(', ')}, which the quarantine adds to say why a row was set aside (${QUARANTINE_COLUMNS.join(', ')}): rename it in the query`;
      throw new ConfigError(`job ${this.#job.name}: ${path}: ${message}`, { issues: [{ path, message, value: 'quarantine' }] });
    }
    const total = metadata?.total_row_count;
    if (this.#job.result?.filters === undefined && total !== undefined) this.#checkRows(total, 'the service reports');
  }

  /** The batches of the read starting at row `startRow` (0-based), every row checked; the row count checked when they end. Quarantined rows leave the read for `quarantineTo`'s feed. */
  async *watch(batches: AsyncIterable<RecordBatch>, schema: Schema, startRow: number): AsyncGenerator<RecordBatch, void, undefined> {
    const watches = Object.entries(this.#expect.checks ?? {}).map(([name, check]) => this.#columnWatch(name, check, schema));
    const uniques = watches.flatMap((w) => (w.unique === undefined ? [] : [w.unique]));
    const feed = this.#feed;
    const split = feed === undefined ? undefined : quarantineSplitter(schema);
    let row = startRow;
    let ended = false;
    try {
      for await (const batch of batches) {
        const verdicts: Verdicts = new Array(batch.numRows);
        for (const watch of watches) watch.check(batch, row, verdicts);
        if (uniques.length > 0) this.#checkUnique(uniques, batch, row, verdicts);
        row += batch.numRows;
        if (split === undefined || !verdicts.some((v) => v !== undefined)) {
          yield batch;
          continue;
        }
        const { good, bad } = split(batch, verdicts);
        for (const b of bad) await feed!.push(b);
        yield* good;
      }
      // Before the end reaches the outputs: a count out of range fails the read, so nothing commits.
      if (!this.#rowsChecked) this.#checkRows(row, 'the run read');
      ended = true;
      feed?.close();
    } catch (error) {
      // The quarantines fail with the read's own error: whichever reports first, the cause is the same.
      feed?.fail(error);
      throw error;
    } finally {
      // A failed or abandoned read leaves the quarantine uncommitted, as it leaves the outputs.
      if (!ended) feed?.fail(new Error('the read of the result stopped before its end'));
    }
  }

  /** Sends the rows `quarantine` checks set aside to `feed` (the quarantine outputs' read). */
  quarantineTo(feed: QuarantineFeed): void {
    this.#feed = feed;
  }

  #checkRows(total: number, source: string): void {
    this.#rowsChecked = true;
    const rows = this.#expect.rows;
    const on = this.#rowsOn;
    if (rows?.min !== undefined && total < rows.min) this.#violated({ check: `${this.#at}.rows.min`, value: total, problem: `${source} ${total} rows, fewer than min ${rows.min}` }, on);
    if (rows?.max !== undefined && total > rows.max) this.#violated({ check: `${this.#at}.rows.max`, value: total, problem: `${source} ${total} rows, more than max ${rows.max}` }, on);
  }

  /** The columns and the row count have no row to set aside: under quarantine they fail. */
  get #rowsOn(): 'fail' | 'warn' {
    return this.#expect.on_violation === 'warn' ? 'warn' : 'fail';
  }

  /** One column's checks (unique apart) as a function of a batch and the result row its first row is. */
  #columnWatch(name: string, check: ColumnCheck, schema: Schema): ColumnWatch {
    const field = schema.fields.find((f) => f.name === name);
    if (field === undefined) throw new ContractViolationError(this.#job.name, { check: `${this.#at}.checks.${name}`, column: name, problem: `no column ${name} in the result to check` });
    const reader = valueText(field);
    const type = field.metadata.get('service.type') ?? String(field.type);
    const kind = orderOf(this.#job.name, `${this.#at}.checks.${name}`, name, check, type);
    const tests = rowTests(check, kind);
    const predicate = check.predicate === undefined ? undefined : this.#bindPredicate(name, check.predicate, schemaTypes(schema));
    const on = check.on_violation ?? this.#expect.on_violation ?? 'fail';
    const at = `${this.#at}.checks.${name}`;
    const columnWatch: ColumnWatch = {
      check: (batch, first, verdicts) => {
        const data = columnData(batch, name);
        const holds = predicate?.(batch);
        for (let i = 0; i < batch.numRows; i++) {
          const value = data.text(i, reader);
          const row = first + i + 1;
          for (const [test, problem] of tests) if (!test(value)) this.#violated({ check: `${at}.${test.name}`, column: name, row, value, problem: `row ${row} of the result: ${name} is ${shown(value)}, ${problem}` }, on, verdicts, i);
          if (holds !== undefined && holds(i) === false) {
            this.#violated({ check: `${at}.predicate`, column: name, row, value, problem: `row ${row} of the result: ${name} is ${shown(value)}, breaks predicate "${check.predicate}"` }, on, verdicts, i);
          }
        }
      },
    };
    if (check.unique === true) columnWatch.unique = { name, reader, on, seen: new Set<string>() };
    return columnWatch;
  }

  /**
   * unique, after the other checks: a row another check quarantined never reaches the outputs, so
   * its values are not held (a later row with the same key is the one published); a row that
   * repeats any unique column's value adds none of its values.
   */
  #checkUnique(uniques: readonly UniqueWatch[], batch: RecordBatch, first: number, verdicts: Verdicts): void {
    const columns = uniques.map((u) => ({ u, data: columnData(batch, u.name) }));
    for (let i = 0; i < batch.numRows; i++) {
      if (verdicts[i] !== undefined) continue;
      const row = first + i + 1;
      const values = columns.map(({ u, data }) => data.text(i, u.reader));
      columns.forEach(({ u }, c) => {
        const value = values[c]!;
        if (value !== null && u.seen.has(value)) this.#violated({ check: `${this.#at}.checks.${u.name}.unique`, column: u.name, row, value, problem: `row ${row} of the result: ${u.name} ${shown(value)} appeared before in this run` }, u.on, verdicts, i);
      });
      if (verdicts[i] !== undefined) continue;
      columns.forEach(({ u }, c) => {
        const value = values[c]!;
        if (value === null || u.seen.has(value)) return;
        if (u.seen.size >= this.#maxUnique) {
          throw new ContractViolationError(this.#job.name, { check: `${this.#at}.checks.${u.name}.unique`, column: u.name, row, problem: `more than ${this.#maxUnique.toLocaleString('en-US')} distinct values of ${u.name}: the check holds them in memory and stops there; check uniqueness in the query instead (count(distinct ${u.name}) = count(*))` });
        }
        u.seen.add(value);
      });
    }
  }

  /** A column's predicate bound to the result's columns: per batch, whether row i holds (false: it breaks it). */
  #bindPredicate(name: string, text: string, types: ReadonlyMap<string, string>): (batch: RecordBatch) => (i: number) => boolean | null {
    const predicate = parsePredicate(text);
    let test: ReturnType<typeof bindPredicate>;
    try {
      test = bindPredicate(predicate, types);
    } catch (error) {
      if (!(error instanceof PredicateError)) throw error;
      const path = `${this.#at}.checks.${name}.predicate`;
      throw new ConfigError(`job ${this.#job.name}: ${path}: ${error.message}`, { issues: [{ path, message: error.message, value: text }] });
    }
    return (batch) => {
      const columns = new Map(predicate.columns.map((c) => [c, { data: columnData(batch, c), reader: valueText(batch.schema.fields.find((f) => f.name === c)!) }]));
      // One reader per batch, pointed at the row being tested: nothing is allocated per row.
      let row = 0;
      const value = (c: string): string | null => {
        const { data, reader } = columns.get(c)!;
        return data.text(row, reader);
      };
      return (i) => {
        row = i;
        return test(value);
      };
    };
  }

  #violated(violation: Violation, on: 'fail' | 'warn' | 'quarantine' = this.#expect.on_violation ?? 'fail', verdicts?: Verdicts, i?: number): void {
    if (on === 'fail' || (on === 'quarantine' && verdicts === undefined)) throw new ContractViolationError(this.#job.name, violation);
    const counts = on === 'warn' ? this.#warnings : this.#quarantined;
    if (on === 'quarantine') verdicts![i!] ??= violation;
    const known = counts.get(violation.check);
    if (known !== undefined) {
      known.count++;
      return;
    }
    counts.set(violation.check, { check: violation.check, ...(violation.column === undefined ? {} : { column: violation.column }), count: 1, first: violation.problem });
    if (on === 'warn') {
      this.#warn?.(`contract broken (on_violation: warn, published anyway; later violations of this check are counted, not logged): ${violation.check}: ${violation.problem}`, { job: this.#job.name, check: violation.check });
    }
  }
}

/** A violation a `quarantine` check found in one row of a batch (the first, when it broke several). */
type Verdicts = (Violation | undefined)[];

interface UniqueWatch {
  readonly name: string;
  readonly reader: ReturnType<typeof valueText>;
  readonly on: 'fail' | 'warn' | 'quarantine';
  readonly seen: Set<string>;
}

interface ColumnWatch {
  readonly check: (batch: RecordBatch, first: number, verdicts: Verdicts) => void;
  unique?: UniqueWatch;
}

function schemaTypes(schema: Schema): Map<string, string> {
  return new Map(schema.fields.map((f) => [f.name, f.metadata.get('service.type') ?? String(f.type)]));
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
function orderOf(job: string, at: string, column: string, check: ColumnCheck, type: string): CursorKind | undefined {
  const kind = cursorKind(type);
  for (const bound of ['min', 'max'] as const) {
    const value = check[bound];
    if (value === undefined) continue;
    const path = `${at}.${bound}`;
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

