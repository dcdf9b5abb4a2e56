import { type Field, type RecordBatch, Schema, makeData, RecordBatch as Batch, Struct, vectorFromArray } from 'apache-arrow';
import type { Job } from '../config/jobSchema.ts';
import type { DriftPolicy } from '../config/notifySchema.ts';
import type { CommittedColumn } from '../export/commit.ts';
import { commitFor } from '../export/commitFor.ts';
import { SchemaDriftError } from '../export/errors.ts';
import { destinationStorage } from '../export/iceberg/destinationStorage.ts';
import { parseMetadata } from '../export/iceberg/metadata.ts';
import { mapSchema, typeText } from '../export/iceberg/types.ts';
import type { ResolvedOutput } from '../export/outputConfig.ts';
import { openDestination } from '../export/storage/openDestination.ts';
import type { ExecutionStatus } from '../protocol/index.ts';
import { arrowField, arrowSchema, TYPE_METADATA_KEY } from '../types/arrow.ts';
import { parseType } from '../types/parse.ts';
import { formatType } from '../types/sql-type.ts';

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
  /** added: in the result, not in the output; removed: in the output, not in the result; type: in both, typed differently. */
  readonly change: 'added' | 'removed' | 'type';
  /** The committed type (removed, type). */
  readonly from?: string;
  /** The result's type (added, type). */
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
  return `column ${c.column} was ${c.from}, is ${c.to}`;
}

/** The policy of one output: its own, else the job's, else evolve. */
export function driftPolicyOf(job: Pick<Job, 'schema_drift'>, output: ResolvedOutput): DriftPolicy {
  return (output as DriftOutput).schemaDrift ?? job.schema_drift ?? 'evolve';
}

/** Whether a run looks for drift at all: a policy was set, or drift is notified. Otherwise a run reads nothing more than before. */
export function watchesDrift(job: Job): boolean {
  if (job.schema_drift !== undefined || job.outputs.some((o) => (o as DriftOutput).schemaDrift !== undefined)) return true;
  return job.notify?.webhook.events?.includes('drift') ?? false;
}

interface CommittedSchema {
  readonly columns: readonly CommittedColumn[];
  readonly types: 'service' | 'iceberg';
}

/**
 * The columns an output committed last (undefined: nothing committed yet, a single stream, or a
 * commit that did not record them): a manifest's schema, an Iceberg path table's current schema.
 * Read through the commit protocol; an Iceberg table's current metadata file is its commit's version.
 */
export async function committedSchema(output: ResolvedOutput, signal: AbortSignal): Promise<CommittedSchema | undefined> {
  const destination = openDestination(output);
  try {
    if (!destination.multiFile) return undefined;
    const commit = await commitFor(output).read(destination, signal);
    if (commit === undefined) return undefined;
    if (output.table !== 'iceberg') return commit.columns === undefined ? undefined : { columns: commit.columns, types: 'service' };
    const file = commit.version;
    if (file === undefined || output.catalog !== undefined) return undefined;
    const storage = destinationStorage(destination);
    const bytes = await storage.read(file, signal);
    if (bytes === undefined) return undefined;
    const metadata = parseMetadata(bytes, storage.url, file);
    const current = metadata.schemas.find((s) => s['schema-id'] === metadata['current-schema-id']);
    return current === undefined ? undefined : { columns: current.fields.map((f) => ({ name: f.name, type: typeText(f.type) })), types: 'iceberg' };
  } finally {
    await destination.close();
  }
}

/** The result's columns as the output records them: service types, or the Iceberg types the table would give them. */
export function resultColumns(names: readonly string[], types: readonly string[], as: 'service' | 'iceberg'): CommittedColumn[] {
  const columns = names.map((name, i) => ({ name, type: types[i] ?? '' }));
  if (as === 'service') return columns;
  const mapped = mapSchema(arrowSchema(columns), { idFor: () => 0 });
  return mapped.fields.map((f) => ({ name: f.name, type: typeText(f.type) }));
}

/** The differences between what an output committed and a result, committed order first, then the new columns. */
export function compareColumns(committed: readonly CommittedColumn[], result: readonly CommittedColumn[]): ColumnChange[] {
  const now = new Map(result.map((c) => [c.name, c.type]));
  const changes: ColumnChange[] = [];
  for (const c of committed) {
    const type = now.get(c.name);
    if (type === undefined) changes.push({ column: c.name, change: 'removed', from: c.type });
    else if (!sameType(c.type, type)) changes.push({ column: c.name, change: 'type', from: c.type, to: type });
  }
  const known = new Set(committed.map((c) => c.name));
  for (const c of result) if (!known.has(c.name)) changes.push({ column: c.name, change: 'added', to: c.type });
  return changes;
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
 * manifest output keeps every committed column with its type, and adds columns only in a format
 * whose files may differ by added columns; an Iceberg table adds columns but keeps types.
 */
function evolveProblem(output: ResolvedOutput, changes: readonly ColumnChange[]): string | undefined {
  if (output.table === 'iceberg') {
    return changes.some((c) => c.change === 'type') ? 'an Iceberg table keeps the type of its columns: cast it back in the query, or set schema_drift: freeze to keep the table as it is' : undefined;
  }
  if (output.mode !== 'append') return undefined;
  if (changes.some((c) => c.change !== 'added')) return 'an appended output keeps every committed column and its type: bring it back or cast it in the query, set schema_drift: freeze (missing columns written as NULL), or use mode: replace';
  if (output.format.addsColumns !== true) return `${output.format.type} files of one output must all have the same columns: set schema_drift: freeze (drops the new columns), use mode: replace, or parquet or ndjson`;
  return undefined;
}

/** How one frozen output's batches are reshaped to its committed columns. */
interface Reshape {
  readonly schema: Schema;
  /** Per target column: the result column it takes, or the field written as NULL. */
  readonly sources: readonly (number | Field)[];
}

/**
 * A run's drift check: `beforeFetch` compares each output's committed columns with the result's
 * (after `result.columns`) and applies its policy; `shape` reshapes a frozen output's rows.
 */
export class RunDrift {
  readonly #job: Job;
  readonly #onDrift: ((drift: OutputDrift) => void) | undefined;
  readonly #reshapes = new Map<number, { readonly committed: CommittedSchema; reshape?: Reshape }>();
  readonly #found: OutputDrift[] = [];

  constructor(job: Job, onDrift?: (drift: OutputDrift) => void) {
    this.#job = job;
    this.#onDrift = onDrift;
  }

  /** The drift found by this run (one entry per output that drifted). */
  get found(): readonly OutputDrift[] {
    return this.#found;
  }

  /** True when some output's rows are reshaped: part threads, which read their own rows, would bypass it. */
  get reshapes(): boolean {
    return this.#reshapes.size > 0;
  }

  async beforeFetch(status: ExecutionStatus, signal: AbortSignal): Promise<void> {
    const job = this.#job;
    const names = status.result_metadata?.column_names ?? [];
    const types = status.result_metadata?.column_types ?? [];
    const shaped = job.result?.columns;
    const pick = shaped === undefined ? names.map((_, i) => i) : shaped.map((c) => names.indexOf(c)).filter((i) => i >= 0);
    const fetched = { names: pick.map((i) => names[i]!), types: pick.map((i) => types[i]!) };
    for (const [index, output] of job.outputs.entries()) {
      // Watched only for a drift notification (evolve): an unreadable commit is the write's to report, as before.
      const committed = await committedSchema(output, signal).catch((error: unknown) => {
        if (driftPolicyOf(job, output) !== 'evolve') throw error;
        return undefined;
      });
      if (committed === undefined) continue;
      const changes = compareColumns(committed.columns, resultColumns(fetched.names, fetched.types, committed.types));
      if (changes.length === 0) continue;
      this.#decide(index, output, committed, changes);
    }
  }

  #decide(index: number, output: ResolvedOutput, committed: CommittedSchema, changes: ColumnChange[]): void {
    const policy = driftPolicyOf(this.#job, output);
    const base = { output: index, url: output.path, policy, changes, types: committed.types };
    const stop = (why: string): never => {
      const drift: OutputDrift = { ...base, action: 'failed' };
      this.#report(drift);
      throw new SchemaDriftPolicyError(this.#job.name, drift, why);
    };
    if (policy === 'fail') stop('schema_drift: fail');
    if (policy === 'freeze') {
      const retyped = changes.filter((c) => c.change === 'type');
      if (retyped.length > 0) stop('schema_drift: freeze keeps the committed types; cast the column back in the query, or write to another path');
      // A missing partition column would send every row to the NULL partition: the layout cannot be kept.
      const unplaced = changes.filter((c) => c.change === 'removed' && output.partitionBy.includes(c.column));
      if (unplaced.length > 0) stop('schema_drift: freeze cannot write a partition_by column as NULL; bring it back in the query');
      this.#reshapes.set(index, { committed });
      this.#report({ ...base, action: 'frozen' });
      return;
    }
    const problem = evolveProblem(output, changes);
    if (problem !== undefined) stop(`schema_drift: evolve: ${problem}`);
    this.#report({ ...base, action: 'evolved' });
  }

  #report(drift: OutputDrift): void {
    this.#found.push(drift);
    this.#onDrift?.(drift);
  }

  /** A frozen output's schema and batches: its committed columns, in their order (an Iceberg table: the result's without the new ones). */
  shape(index: number, schema: Schema, batches: AsyncIterable<RecordBatch>): { schema: Schema; batches: AsyncIterable<RecordBatch> } {
    const frozen = this.#reshapes.get(index);
    if (frozen === undefined) return { schema, batches };
    frozen.reshape ??= reshapeFor(schema, frozen.committed);
    const reshape = frozen.reshape;
    return { schema: reshape.schema, batches: reshaped(batches, reshape) };
  }
}

function reshapeFor(schema: Schema, committed: CommittedSchema): Reshape {
  const at = new Map(schema.fields.map((f, i) => [f.name, i]));
  if (committed.types === 'iceberg') {
    // The table keeps the columns the result lacks (read as NULL): only the new ones are dropped.
    const known = new Set(committed.columns.map((c) => c.name));
    const sources = schema.fields.flatMap((f, i) => (known.has(f.name) ? [i] : []));
    return { schema: new Schema(sources.map((i) => schema.fields[i]!), schema.metadata), sources };
  }
  const sources = committed.columns.map((c): number | Field => at.get(c.name) ?? arrowField(c.name, parseType(c.type), {}, c.type));
  const fields = sources.map((s, k) => {
    if (typeof s !== 'number') return s;
    // The committed spelling of the type, so the append check compares like with like.
    const f = schema.fields[s]!;
    return f.clone({ metadata: new Map([...f.metadata, [TYPE_METADATA_KEY, committed.columns[k]!.type]]) });
  });
  return { schema: new Schema(fields, schema.metadata), sources };
}

async function* reshaped(batches: AsyncIterable<RecordBatch>, reshape: Reshape): AsyncGenerator<RecordBatch> {
  const { schema, sources } = reshape;
  for await (const batch of batches) {
    const length = batch.numRows;
    const children = sources.map((s) => (typeof s === 'number' ? batch.data.children[s]! : vectorFromArray(new Array<null>(length).fill(null), s.type).data[0]!));
    yield new Batch(schema, makeData({ type: new Struct(schema.fields), length, nullCount: 0, children }));
  }
}
