import { MANIFEST_NAME, resolveOutput } from '../export/index.ts';

export interface Committed {
  readonly url: string;
  readonly rows: number;
  readonly bytes: number;
  readonly files: number;
}

/**
 * The output's committed export, if its manifest says it holds `executionId` with `rows` rows:
 * that output is done and a resumed run skips it. Reads one small object; any doubt (no
 * manifest, unreadable, another execution) means "not committed".
 */
export async function committedExport(output: unknown, executionId: string, rows: number | undefined, signal: AbortSignal): Promise<Committed | undefined> {
  const resolved = resolveOutput(output);
  const destination = resolved.sink.create(resolved.sinkConfig);
  try {
    if (!destination.multiFile) return undefined;
    const bytes = await destination.read(MANIFEST_NAME, signal).catch(() => undefined);
    if (bytes === undefined) return undefined;
    const manifest = JSON.parse(new TextDecoder().decode(bytes)) as unknown;
    if (typeof manifest !== 'object' || manifest === null) return undefined;
    const m = manifest as { execution_id?: unknown; total_rows?: unknown; total_bytes?: unknown; files?: unknown };
    if (m.execution_id !== executionId || typeof m.total_rows !== 'number' || !Array.isArray(m.files)) return undefined;
    if (rows !== undefined && m.total_rows !== rows) return undefined;
    return { url: destination.url, rows: m.total_rows, bytes: typeof m.total_bytes === 'number' ? m.total_bytes : 0, files: m.files.length };
  } catch {
    return undefined;
  } finally {
    await destination.close();
  }
}
