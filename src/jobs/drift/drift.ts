import type { RecordBatch, Schema } from 'apache-arrow';
import type { Job } from '../../config/jobSchema.ts';
import type { DriftPolicy } from '../../config/notifySchema.ts';
import type { Commit, CommittedColumn } from '../../export/commit.ts';
import { SchemaDriftError } from '../../export/errors.ts';
import { mapSchema, typeText } from '../../export/iceberg/types.ts';
import type { ResolvedOutput } from '../../export/outputConfig.ts';
import type { ExecutionStatus } from '../../protocol/index.ts';
import { arrowSchema } from '../../types/arrow.ts';
import { parseType } from '../../types/parse.ts';
import { formatType } from '../../types/sqlType.ts';
import { widens } from '../../export/appendCheck.ts';
import { type Reshape, reshaped, reshapeTo, serviceTypeOf, type TargetColumn } from './reshape.ts';

/**
 * Schema drift: the result's columns against what each output committed last, found from the
 * execution's metadata (`column_types`) before any page is fetched, and what each output's
 * `schema_drift` policy does about it:
 * - evolve (the default, what sluice always did): the output takes the result's columns where its
 *   format and mode can hold them; a change it cannot hold fails, now before any page;
 * - freeze: the output keeps its committed columns: new ones are dropped, missing ones written as
 *   NULL (an Iceberg table reads them as NULL), a changed type fails;
 * - fail: any difference fails the run before any page, naming each column and both types.
 */


/** An output as the job file resolved it, with the `schema_drift` it was given (absent: the job's). */
export type DriftOutput = ResolvedOutput & { readonly schemaDrift?: DriftPolicy | undefined };

export interface ColumnChange {
  readonly column: string;
  /**
   * added: in the result, not in the output; removed: in the output, not in the result; type: in
   * both, typed differently; widened: the result's type is narrower than the output's, whose type
   * can hold every value (integer into bigint, real into double, a decimal into one with more digits);
   * promoted: the other way round, the result's type is wider than the output's, which can take it
   * (an appended Parquet or NDJSON output's new files, an Iceberg table's promoted column).
   */
  readonly change: 'added' | 'removed' | 'type' | 'widened' | 'promoted';
  /** The committed type (removed, type, widened, promoted). */
  readonly from?: string;
  /** The result's type (added, type, widened, promoted). */
  readonly to?: string;
}

/** The drift of one output, as a run reports it (event, notification, summary). */
export interface OutputDrift {
  readonly output: number;
  readonly url: string;
  readonly policy: DriftPolicy;
  readonly changes: readonly ColumnChange[];
  /** evolved: the output takes the new columns; frozen: it keeps its columns; failed: the run stops. */
  readonly action: 'evolved' | 'frozen' | 'failed';
  /** Types as the service spells them (manifest outputs), or as the Iceberg table does. */
  readonly types: 'service' | 'iceberg';
}

/** The run stopped by schema drift, before any page was fetched: nothing was published. */
export class SchemaDriftPolicyError extends SchemaDriftError {
  readonly job: string;
  readonly drift: OutputDrift;

  constructor(job: string, drift: OutputDrift, why: string) {
    super(drift.url, drift.changes[0]?.column ?? '', '');
    this.job = job;
    this.drift = drift;
    this.message = `job ${job}: output ${drift.url}: schema drift (${why}): ${drift.changes.map(describeChange).join('; ')}; no page was fetched and nothing was published`;
  }
}

export function describeChange(c: ColumnChange): string {
  if (c.change === 'added') return `column ${c.column} (${c.to}) is new`;
  if (c.change === 'removed') return `column ${c.column} (${c.from}) is not in the result`;
  if (c.change === 'widened') return `column ${c.column} is ${c.to}, the output's ${c.from} holds it`;
  if (c.change === 'promoted') return `column ${c.column} was ${c.from}, is the wider ${c.to}`;
  return `column ${c.column} was ${c.from}, is ${c.to}`;
}

/** The policy of one output: its own, else the job's, else evolve. */
export function driftPolicyOf(job: Pick<Job, 'schema_drift'>, output: ResolvedOutput): DriftPolicy {
  return (output as DriftOutput).schemaDrift ?? job.schema_drift ?? 'evolve';
}

/** Whether a job sets `schema_drift`, on itself or on an output. */
export function watchesPolicy(job: Job): boolean {
  return job.schema_drift !== undefined || job.outputs.some((o) => (o as DriftOutput).schemaDrift !== undefined);
}

/** Whether a run looks for drift at all: a policy was set, or drift is notified. Otherwise a run reads nothing more than before. */
export function watchesDrift(job: Job): boolean {
  return watchesPolicy(job) || (job.notify?.webhook.events?.includes('drift') ?? false);
}

interface CommittedSchema {
  readonly columns: readonly CommittedColumn[];
  readonly types: 'service' | 'iceberg';
}

/**
 * The columns an output committed last (undefined: nothing committed yet, a single stream, or a
 * commit that did not record them): a manifest's schema, an Iceberg table's current schema (from
 * its metadata file, or from the catalog that holds it). Read through the commit protocol.
 */
export function committedSchema(output: ResolvedOutput, commit: Commit | undefined): CommittedSchema | undefined {
  if (commit === undefined) return undefined;
  if (output.table === 'iceberg') return commit.tableColumns === undefined ? undefined : { columns: commit.tableColumns, types: 'iceberg' };
  return commit.columns === undefined ? undefined : { columns: commit.columns, types: 'service' };
}

/** The result's columns as the output records them: service types, or the Iceberg types the table would give them. */
export function resultColumns(names: readonly string[], types: readonly string[], as: 'service' | 'iceberg'): CommittedColumn[] {
  const columns = names.map((name, i) => ({ name, type: types[i] ?? '' }));
  if (as === 'service') return columns;
  const mapped = mapSchema(arrowSchema(columns), { idFor: () => 0 });
  return mapped.fields.map((f) => ({ name: f.name, type: typeText(f.type) }));
}

/** The differences between what an output committed and a result, committed order first, then the new columns. */
export function compareColumns(committed: readonly CommittedColumn[], result: readonly CommittedColumn[], types: 'service' | 'iceberg' = 'service'): ColumnChange[] {
  const service = types === 'iceberg' ? serviceTypeOf : (t: string) => t;
  const now = new Map(result.map((c) => [c.name, c.type]));
  const changes: ColumnChange[] = [];
  for (const c of committed) {
    const type = now.get(c.name);
    if (type === undefined) changes.push({ column: c.name, change: 'removed', from: c.type });
    else if (!sameType(c.type, type)) changes.push({ column: c.name, change: retyped(service(c.type), service(type)), from: c.type, to: type });
  }
  const known = new Set(committed.map((c) => c.name));
  for (const c of result) if (!known.has(c.name)) changes.push({ column: c.name, change: 'added', to: c.type });
  return changes;
}

/** A committed column's type against the result's: narrower (widened into it), wider (promoted), or another type. */
function retyped(committed: string, result: string): 'widened' | 'promoted' | 'type' {
  if (widens(result, committed)) return 'widened';
  return widens(committed, result) ? 'promoted' : 'type';
}

/** Types compared as the contract compares them: canonical text, case and spaces ignored. */
function sameType(a: string, b: string): boolean {
  const canonical = (t: string) => {
    const parsed = parseType(t);
    return (parsed.kind === 'unknown' ? t : formatType(parsed)).toLowerCase().replace(/\s/g, '');
  };
  return canonical(a) === canonical(b);
}

/**
 * What evolve cannot do for an output, said before any page instead of by the write: an appended
 * manifest output keeps every committed column with its type, and adds columns or takes a wider
 * type only in a format whose files may differ (readers merge them by name); an Iceberg table adds
 * columns and promotes types as the spec allows, except a partition column's.
 */
function evolveProblem(output: ResolvedOutput, changes: readonly ColumnChange[]): string | undefined {
  if (output.table === 'iceberg') {
    if (changes.some((c) => c.change === 'type')) return 'an Iceberg table keeps the type of its columns (only int to long, float to double and a decimal to more digits are promoted): cast it back in the query, or set schema_drift: freeze to keep the table as it is';
    return changes.some((c) => c.change === 'promoted' && output.partitionBy.includes(c.column)) ? 'a partition column of an Iceberg table keeps its type: cast it back in the query' : undefined;
  }
  if (output.mode !== 'append') return undefined;
  if (changes.some((c) => c.change === 'removed' || c.change === 'type')) return 'an appended output keeps every committed column and its type: bring it back or cast it in the query, set schema_drift: freeze (missing columns written as NULL), or use mode: replace';
  if (output.format.addsColumns !== true && changes.some((c) => c.change === 'added' || c.change === 'promoted')) return `${output.format.type} files of one output must all have the same columns and types: set schema_drift: freeze (drops the new columns), cast a wider column back in the query, use mode: replace, or parquet or ndjson`;
  return undefined;
}

/**
 * A run's drift check: `beforeFetch` compares each output's committed columns with the result's
 * (after `result.columns`) and applies its policy; `shape` reshapes the rows of an output that
 * keeps its columns (freeze) or takes a narrower type into its wider one.
 */
export class RunDrift {
  readonly #job: Job;
  readonly #onDrift: ((drift: OutputDrift) => void) | undefined;
  readonly #targets = new Map<number, { readonly columns: readonly TargetColumn[]; reshape?: Reshape }>();
  readonly #found: OutputDrift[] = [];

  constructor(job: Job, onDrift?: (drift: OutputDrift) => void) {
    this.#job = job;
    this.#onDrift = onDrift;
  }

  /** The drift found by this run (one entry per output that drifted). */
  get found(): readonly OutputDrift[] {
    return this.#found;
  }

  /** `committed`: each output's commit, by index, as its session read it. */
  async beforeFetch(status: ExecutionStatus, committedAt: (index: number) => Promise<Commit | undefined>): Promise<void> {
    const job = this.#job;
    const names = status.result_metadata?.column_names ?? [];
    const types = status.result_metadata?.column_types ?? [];
    const shaped = job.result?.columns;
    const pick = shaped === undefined ? names.map((_, i) => i) : shaped.map((c) => names.indexOf(c)).filter((i) => i >= 0);
    const fetched = pick.map((i) => ({ name: names[i]!, type: types[i]! }));
    for (const [index, output] of job.outputs.entries()) {
      // Watched only for a drift notification (evolve): an unreadable commit is the write's to report, as before.
      const committed = await committedAt(index).then((c) => committedSchema(output, c)).catch((error: unknown) => {
        if (driftPolicyOf(job, output) !== 'evolve') throw error;
        return undefined;
      });
      if (committed === undefined) continue;
      const changes = compareColumns(committed.columns, resultColumns(fetched.map((c) => c.name), fetched.map((c) => c.type), committed.types), committed.types);
      if (changes.length === 0) continue;
      this.#decide(index, output, { committed, fetched, changes });
    }
  }

  #decide(index: number, output: ResolvedOutput, given: Found): void {
    const policy = driftPolicyOf(this.#job, output);
    // A replaced manifest output evolves to the result's types, narrower or wider: nothing is widened or promoted.
    const replaces = policy === 'evolve' && output.table !== 'iceberg' && output.mode !== 'append';
    const found = replaces ? { ...given, changes: given.changes.map((c): ColumnChange => (c.change === 'widened' || c.change === 'promoted' ? { ...c, change: 'type' } : c)) } : given;
    const { committed, changes } = found;
    const base = { output: index, url: output.path, policy, changes, types: committed.types };
    const stop = (why: string): never => {
      const drift: OutputDrift = { ...base, action: 'failed' };
      this.#report(drift);
      throw new SchemaDriftPolicyError(this.#job.name, drift, why);
    };
    if (policy === 'fail') stop('schema_drift: fail');
    if (policy === 'freeze') {
      // A wider type too: the committed column could not hold its values.
      if (changes.some((c) => c.change === 'type' || c.change === 'promoted')) stop('schema_drift: freeze keeps the committed types; cast the column back in the query, or write to another path');
      // A missing partition column would send every row to the NULL partition: the layout cannot be kept.
      const unplaced = changes.filter((c) => c.change === 'removed' && output.partitionBy.includes(c.column));
      if (unplaced.length > 0) stop('schema_drift: freeze cannot write a partition_by column as NULL; bring it back in the query');
      this.#targets.set(index, { columns: frozenColumns(found) });
      this.#report({ ...base, action: 'frozen' });
      return;
    }
    const problem = evolveProblem(output, changes);
    if (problem !== undefined) stop(`schema_drift: evolve: ${problem}`);
    if (changes.some((c) => c.change === 'widened')) this.#targets.set(index, { columns: evolvedColumns(found) });
    this.#report({ ...base, action: 'evolved' });
  }

  #report(drift: OutputDrift): void {
    this.#found.push(drift);
    this.#onDrift?.(drift);
  }

  /** An output's schema and batches as it takes them (unchanged unless its drift reshapes them). */
  shape(index: number, schema: Schema, batches: AsyncIterable<RecordBatch>): { schema: Schema; batches: AsyncIterable<RecordBatch> } {
    const target = this.#targets.get(index);
    if (target === undefined) return { schema, batches };
    target.reshape ??= reshapeTo(schema, target.columns);
    return { schema: target.reshape.schema, batches: reshaped(batches, target.reshape) };
  }
}

/** What `beforeFetch` found for one output that drifted. */
interface Found {
  readonly committed: CommittedSchema;
  /** The result's columns as fetched, with their service types. */
  readonly fetched: readonly CommittedColumn[];
  readonly changes: readonly ColumnChange[];
}

/** The service type a widened column is written as: the output's (an Iceberg type as the service spells it). */
function widenedTo(found: Found, column: string): string | undefined {
  const change = found.changes.find((c) => c.column === column && c.change === 'widened');
  if (change === undefined) return undefined;
  return found.committed.types === 'iceberg' ? serviceTypeOf(change.from!) : change.from!;
}

/** freeze: the committed columns in their order (an Iceberg table: the result's it knows; it reads the others as NULL). */
function frozenColumns(found: Found): TargetColumn[] {
  const { committed, fetched } = found;
  if (committed.types === 'iceberg') {
    const known = new Set(committed.columns.map((c) => c.name));
    return evolvedColumns(found).filter((c) => known.has(c.name));
  }
  return committed.columns.map((c) => ({ name: c.name, type: c.type, widen: widenedTo(found, c.name) !== undefined && fetched.some((f) => f.name === c.name) }));
}

/** evolve: the result's columns, a narrower type widened to the output's. */
function evolvedColumns(found: Found): TargetColumn[] {
  return found.fetched.map((c) => {
    const to = widenedTo(found, c.name);
    return to === undefined ? { name: c.name, type: c.type } : { name: c.name, type: to, widen: true };
  });
}
