import type { RecordBatch, Schema } from 'apache-arrow';
import type { Job } from '../../config/jobSchema.ts';
import { RowCountMismatchError } from '../../export/errors.ts';
import type { SharedArea } from '../../export/destination.ts';
import { describeSchema, type Manifest } from '../../export/manifest.ts';
import type { ResolvedOutput } from '../../export/outputConfig.ts';
import { PartFile } from '../../export/partFile.ts';
import { type ResultStream, stream } from '../../pipeline/stream.ts';
import { readOptions } from '../run/readOptions.ts';
import { decode, encode, journalName, journalSchema, type Plan, type PlannedPart, type ShardSpec, type WrittenPart } from './plan.ts';
import type { ServiceClient } from '../../client/serviceClient.ts';

export interface Written {
  /** Every part of this shard, in part order. */
  readonly parts: WrittenPart[];
  readonly resumed: number;
  readonly schema: Manifest['schema'];
}

/** What writing a shard's parts takes of the shard's options. */
export interface PartsOptions {
  readonly client: ServiceClient;
  readonly shard: ShardSpec;
  readonly signal: AbortSignal;
  readonly events?: { onInfo?(message: string, fields: Record<string, unknown>): void } | undefined;
}

/** Where one shard's parts of one output go, and what it reports on the way. */
interface PartsTarget {
  readonly job: Job;
  readonly output: ResolvedOutput;
  readonly plan: Plan;
  readonly area: SharedArea;
  readonly shard: ShardSpec;
  readonly signal: AbortSignal;
  readonly info: (message: string, fields: Record<string, unknown>) => void;
}

/** Writes this shard's parts, keeping those a killed attempt completed (its journal, sizes checked). */
export async function writeShardParts(job: Job, output: ResolvedOutput, plan: Plan, area: SharedArea, options: PartsOptions): Promise<Written> {
  const { shard, signal } = options;
  const target: PartsTarget = { job, output, plan, area, shard, signal, info: (message, fields) => options.events?.onInfo?.(message, { job: job.name, shard: shard.index, ...fields }) };
  const mine = plan.parts.filter((p) => p.shard === shard.index);
  const kept = await keptParts(target, mine);
  const todo = mine.filter((part) => !kept.some((k) => k.path === part.path));
  if (kept.length > 0) target.info('parts kept from a killed attempt', { parts: kept.length });
  const start = todo.length > 0 && todo[0]!.first_row > 0 ? { startOffset: Math.min(todo[0]!.first_row, Math.max(0, plan.total_rows - 1)) } : {};
  const result = stream(options.client, { executionId: plan.execution_id }, { ...readOptions(job), signal, ...start });
  const schema = await result.schema();
  const parts = [...kept];
  if (todo.length > 0) await writeHere(target, todo, result, schema, parts);
  return { parts, resumed: kept.length, schema: describeSchema(schema) };
}

/**
 * The parts a killed attempt completed, as its journal lists them with the sizes stored: a shard
 * reads its parts in one pass from the first missing row, so it keeps only a leading run of them.
 */
async function keptParts(target: PartsTarget, mine: readonly PlannedPart[]): Promise<WrittenPart[]> {
  const { area, plan, shard, signal } = target;
  const body = await area.read(journalName(shard.index), signal);
  const journal = body === undefined ? undefined : safeDecode(body);
  const kept: WrittenPart[] = [];
  if (journal === undefined || journal.execution_id !== plan.execution_id) return kept;
  for (const part of mine) {
    const entry = journal.parts.find((p) => p.path === part.path && p.first_row === part.first_row && p.rows === part.rows);
    if (entry !== undefined && (await area.size(part.path, signal)) === entry.bytes) kept.push(entry);
    else break;
  }
  return kept;
}

/** A part is written: the journal lists it (a retried shard keeps it). */
async function journaled(target: PartsTarget, parts: WrittenPart[], part: WrittenPart): Promise<void> {
  parts.push(part);
  parts.sort((a, b) => a.first_row - b.first_row);
  await target.area.save(journalName(target.shard.index), encode({ version: 1, execution_id: target.plan.execution_id, parts }), target.signal);
  target.info('part written', { part: part.path, rows: part.rows, bytes: part.bytes });
}

/** The parts still to write follow each other (a leading run was kept), from one read. */
async function writeHere(target: PartsTarget, todo: readonly PlannedPart[], result: ResultStream, schema: Schema, parts: WrittenPart[]): Promise<void> {
  const { output, plan, area, signal } = target;
  const format = output.format.create(output.formatConfig);
  const batches = result.batches()[Symbol.asyncIterator]();
  const rest: { batch: RecordBatch | undefined } = { batch: undefined };
  try {
    for (const part of todo) {
      const file = new PartFile(area, format, schema, part.path, {}, signal, part.first_row);
      try {
        await fillPart(file, part.rows, batches, rest);
      } catch (error) {
        await file.fail(error);
        throw error;
      }
      const entry = await file.finish();
      if (entry.rows !== part.rows) throw new RowCountMismatchError(plan.execution_id, part.rows, entry.rows);
      await journaled(target, parts, { path: entry.path, first_row: part.first_row, rows: entry.rows, bytes: entry.bytes, sha256: entry.sha256 });
    }
  } finally {
    await batches.return?.(undefined);
  }
}

/** Pushes `rows` rows into `file`, cutting the batch that crosses the part's end; what is left over waits in `rest` for the next part. */
async function fillPart(file: PartFile, rows: number, batches: AsyncIterator<RecordBatch>, rest: { batch: RecordBatch | undefined }): Promise<void> {
  while (file.rows < rows) {
    rest.batch ??= (await batches.next()).value as RecordBatch | undefined;
    if (rest.batch === undefined) return;
    const room = rows - file.rows;
    const piece = rest.batch.numRows <= room ? rest.batch : rest.batch.slice(0, room);
    rest.batch = piece === rest.batch ? undefined : rest.batch.slice(room);
    await file.push(piece);
  }
}

function safeDecode(body: Uint8Array) {
  try {
    return decode(journalSchema, body, 'journal');
  } catch {
    return undefined; // unreadable: the parts are written again
  }
}
