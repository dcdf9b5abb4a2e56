import { createHash } from 'node:crypto';
import type { Job } from '../config/jobSchema.ts';
import { MANIFEST_NAME } from '../export/manifest.ts';
import { describeOutput, type ResolvedOutput } from '../export/outputConfig.ts';

export interface Committed {
  readonly url: string;
  readonly rows: number;
  readonly bytes: number;
  readonly files: number;
}

/**
 * What, besides the execution, decides the files of one output: the job's result shaping and the
 * output's options. Recorded in the manifest (`ExportMeta.fingerprint`) so that an output already
 * written for an execution is skipped only when it was written the same way: the same stored
 * result exported with other columns, another sort or another format is written again.
 */
export function outputFingerprint(job: Pick<Job, 'result'>, output: ResolvedOutput): string {
  const basis = JSON.stringify({ result: job.result ?? null, output: describeOutput(output) });
  return createHash('sha256').update(basis).digest('hex').slice(0, 32);
}

/**
 * The output's committed export, if its manifest says it holds `executionId` with `rows` rows,
 * written with `fingerprint`: that output is done and the run skips it. Reads one small object;
 * any doubt (no manifest, unreadable, another execution, other options) means "not committed".
 */
export async function committedExport(
  output: ResolvedOutput,
  executionId: string,
  rows: number | undefined,
  fingerprint: string,
  signal: AbortSignal,
): Promise<Committed | undefined> {
  const destination = output.sink.create(output.sinkConfig);
  try {
    if (!destination.multiFile) return undefined;
    const bytes = await destination.read(MANIFEST_NAME, signal).catch(() => undefined);
    if (bytes === undefined) return undefined;
    const manifest = JSON.parse(new TextDecoder().decode(bytes)) as unknown;
    if (typeof manifest !== 'object' || manifest === null) return undefined;
    const m = manifest as { execution_id?: unknown; total_rows?: unknown; total_bytes?: unknown; files?: unknown; fingerprint?: unknown };
    if (m.execution_id !== executionId || typeof m.total_rows !== 'number' || !Array.isArray(m.files)) return undefined;
    if (m.fingerprint !== fingerprint) return undefined;
    if (rows !== undefined && m.total_rows !== rows) return undefined;
    return { url: destination.url, rows: m.total_rows, bytes: typeof m.total_bytes === 'number' ? m.total_bytes : 0, files: m.files.length };
  } catch {
    return undefined;
  } finally {
    await destination.close();
  }
}
