import { appendFile, mkdir, readFile, rename, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';

/**
 * One finished run of a job, as `sluice runs` lists it. Written once, when the run ends (however
 * it ends), from the same numbers the summary and the scheduler's metrics report.
 */
const RunRecordSchema = z.object({
  version: z.literal(1),
  job: z.string(),
  started_at: z.string(),
  ended_at: z.string(),
  outcome: z.enum(['succeeded', 'failed', 'stopped']),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  execution_id: z.string().optional(),
  resumed: z.boolean(),
  rows: z.number(),
  fetched_rows: z.number(),
  /** Bytes of the result pages read: as they crossed the wire (compressed, when they were) and decoded. */
  page_bytes: z.object({ wire: z.number(), decoded: z.number() }).optional(),
  files: z.number(),
  bytes: z.number(),
  credits: z.number(),
  /** Credits left in the team's billing cycle after the run, when the key may read usage. */
  credits_left: z.number().optional(),
  attempts: z.number(),
  /** Incremental jobs: the cursor value the run started after, and the high-water mark it committed. */
  cursor: z.object({ from: z.string().nullable(), to: z.string().nullable() }).optional(),
  outputs: z.array(z.object({ url: z.string(), format: z.string(), rows: z.number(), files: z.number(), bytes: z.number(), skipped: z.boolean() })),
  /** Who asked for the run when not the CLI or the scheduler: `mcp` for a tool call of `sluice mcp`. */
  origin: z.string().optional(),
  /** The MCP tool the record is for (origin `mcp`). */
  tool: z.string().optional(),
});
export type RunRecord = z.infer<typeof RunRecordSchema>;

const FILE = 'history.jsonl';
const ROTATED = 'history.1.jsonl';
/** The live file is rotated past this size; with the one rotated generation, history stays under twice it. */
export const DEFAULT_HISTORY_BYTES = 1024 * 1024;

/**
 * The run history of a state directory: one JSON line per run, appended. A line is written with a
 * single append (O_APPEND), so runs of different jobs in different processes (`sluice run` beside
 * `sluice schedule`) never tear each other's lines. Bounded: past `maxBytes` the file becomes
 * `history.1.jsonl` (replacing the previous generation) and a new one starts.
 */
export class RunHistory {
  readonly dir: string;
  readonly #maxBytes: number;

  constructor(dir: string, options: { maxBytes?: number } = {}) {
    this.dir = dir;
    this.#maxBytes = options.maxBytes ?? DEFAULT_HISTORY_BYTES;
  }

  async append(record: RunRecord): Promise<void> {
    const line = `${JSON.stringify(RunRecordSchema.parse(record))}\n`;
    await mkdir(this.dir, { recursive: true });
    const file = join(this.dir, FILE);
    const size = await stat(file).then((s) => s.size, () => 0);
    if (size > 0 && size + Buffer.byteLength(line) > this.#maxBytes) await rename(file, join(this.dir, ROTATED));
    await appendFile(file, line);
  }

  /** Runs oldest first; only `job`'s when given; the last `last` of them when given. */
  /** Records in the order written; `job` or `jobs` keep those jobs' only, before `last` takes the newest. */
  async list(options: { job?: string; jobs?: readonly string[]; last?: number } = {}): Promise<RunRecord[]> {
    const records: RunRecord[] = [];
    for (const name of [ROTATED, FILE]) {
      const text = await readFile(join(this.dir, name), 'utf8').catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return '';
        throw error;
      });
      for (const line of text.split('\n')) {
        if (line.trim() === '') continue;
        const parsed = parseLine(line);
        // A line another version wrote, or a torn one after a crash, is passed over, not fatal.
        if (parsed && (options.job === undefined || parsed.job === options.job) && (options.jobs === undefined || options.jobs.includes(parsed.job))) records.push(parsed);
      }
    }
    return options.last === undefined ? records : records.slice(-options.last);
  }
}

function parseLine(line: string): RunRecord | undefined {
  try {
    const parsed = RunRecordSchema.safeParse(JSON.parse(line));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
