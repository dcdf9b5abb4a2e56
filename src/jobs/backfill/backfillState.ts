import { createHash, randomUUID } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { Job } from '../../config/jobSchema.ts';
import { jobFingerprint, outputsFingerprint } from '../run/runState.ts';
import { writeJsonAtomically } from '../../kit/atomicFile.ts';

/**
 * What survives a killed backfill: each chunk's range, its execution and where it got to, so the
 * next run waits for or reads the executions it left instead of starting (and paying for) them
 * again. Beside the job's run state (`<job>.backfill.json`), written atomically after every change,
 * and cleared with it (`RunStateStore.clear`) once the backfill is committed or can never be.
 */
const ChunkSchema = z.object({
  /** The chunk's bounds, as the query receives them. */
  from: z.string(),
  to: z.string(),
  /** running: started, not known to be finished; done: its result can be read; split: replaced by its two halves (listed after it). */
  state: z.enum(['running', 'done', 'split']),
  execution_id: z.string(),
  rows: z.number().int().nonnegative().optional(),
});
export type ChunkRecord = z.infer<typeof ChunkSchema>;

const BackfillStateSchema = z.object({
  version: z.literal(1),
  job: z.string(),
  /** Source, result shaping, tier and the backfill's range: another of any gives other rows. */
  fingerprint: z.string(),
  outputs: z.string(),
  /** What the outputs' commits name as the export's execution: stable across a resume (per-part resume keys on it). */
  backfill_id: z.string(),
  chunks: z.array(ChunkSchema),
});
export type BackfillStateFile = z.infer<typeof BackfillStateSchema>;

export function backfillFingerprint(job: Job): string {
  const bf = job.backfill!;
  const range = { parameters: bf.parameters, from: bf.from, to: bf.to, chunk: bf.chunk, min_chunk: bf.min_chunk ?? null };
  return createHash('sha256').update(JSON.stringify({ job: jobFingerprint(job), range })).digest('hex').slice(0, 32);
}

export function backfillStateFile(dir: string, job: string): string {
  return join(dir, `${encodeURIComponent(job)}.backfill.json`);
}

/** The chunk records of one backfill, kept in order of the chunks' start and written after each change. */
export class BackfillState {
  readonly #file: string;
  readonly #base: Omit<BackfillStateFile, 'chunks'>;
  readonly #chunks: ChunkRecord[];
  #writing: Promise<void> = Promise.resolve();

  private constructor(file: string, base: Omit<BackfillStateFile, 'chunks'>, chunks: ChunkRecord[]) {
    this.#file = file;
    this.#base = base;
    this.#chunks = chunks;
  }

  /**
   * The state a killed run of this backfill left (same job, source, range and outputs), or a new
   * one. `resume` false (`--fresh`): always new. `readOnly` (a plan): nothing is written or removed.
   */
  static async open(dir: string, job: Job, options: { resume: boolean; readOnly?: boolean }): Promise<{ state: BackfillState; resumed: boolean }> {
    const file = backfillStateFile(dir, job.name);
    const base = { version: 1 as const, job: job.name, fingerprint: backfillFingerprint(job), outputs: outputsFingerprint(job) };
    const previous = options.resume ? await read(file) : undefined;
    if (previous !== undefined && previous.job === job.name && previous.fingerprint === base.fingerprint && previous.outputs === base.outputs) {
      const { chunks, ...rest } = previous;
      return { state: new BackfillState(file, rest, chunks), resumed: true };
    }
    if (options.readOnly !== true) await rm(file, { force: true });
    return { state: new BackfillState(file, { ...base, backfill_id: `backfill-${randomUUID()}` }, []), resumed: false };
  }

  get id(): string {
    return this.#base.backfill_id;
  }

  /** The record of the chunk `[from, to)` that is not split, if any. */
  find(from: string, to: string): ChunkRecord | undefined {
    return this.#chunks.find((c) => c.from === from && c.to === to);
  }

  get chunks(): readonly ChunkRecord[] {
    return this.#chunks;
  }

  /** Records (or replaces) the chunk's record and writes the file. */
  async record(chunk: ChunkRecord): Promise<void> {
    const at = this.#chunks.findIndex((c) => c.from === chunk.from && c.to === chunk.to);
    if (at === -1) this.#chunks.push(chunk);
    else this.#chunks[at] = chunk;
    const state = { ...this.#base, chunks: [...this.#chunks] };
    // One write at a time, in order: the file holds the latest records whatever finishes first.
    this.#writing = this.#writing.then(() => writeJsonAtomically(this.#file, state, { indent: 2 }));
    await this.#writing;
  }
}

async function read(file: string): Promise<BackfillStateFile | undefined> {
  try {
    const parsed = BackfillStateSchema.safeParse(JSON.parse(await readFile(file, 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined; // none, torn or foreign: start afresh
  }
}

