import type { Commit } from '../export/commit.ts';
import type { ExportSummary, OpenedExport } from '../export/writeExport.ts';
import { currentTelemetry, inSpan } from './index.ts';

// An output's write and its commit as spans: `sluice.output` from the write's start to its commit,
// `sluice.output.commit` (a child) for the commit alone. Both are plain wrappers when telemetry is
// off; neither imports OpenTelemetry.

/** `opened`, its write run in a `sluice.output` span (its commit a child, see `commitSpan`) when telemetry runs. */
export function tracedExport(opened: OpenedExport, url: string, format: string): OpenedExport {
  if (currentTelemetry() === undefined) return opened;
  return {
    ...opened,
    write: (input, options) =>
      inSpan('sluice.output', { 'sluice.output.url': url, 'sluice.output.format': format }, async (span) => {
        const summary = await opened.write(input, options);
        span.set(writtenAttributes(summary));
        return summary;
      }),
  };
}

/** What a written output's span tells at its end. */
export function writtenAttributes(summary: Pick<ExportSummary, 'rows' | 'bytes' | 'files' | 'resumedFiles' | 'commit'>): Record<string, string | number | boolean> {
  return {
    'sluice.rows': summary.rows,
    'sluice.files': summary.files.length,
    'sluice.bytes': summary.bytes,
    'sluice.output.skipped': false,
    'sluice.output.resumed_files': summary.resumedFiles,
    ...(summary.commit?.snapshot ? { 'sluice.output.snapshot': summary.commit.snapshot } : {}),
  };
}

/**
 * An output's commit (`publish`) in its own span, `sluice.output.commit`, a child of the output's:
 * the protocol (`manifest`, `iceberg`, ...), the files and rows it makes visible, the snapshot it
 * made; a lost race ends it with `error.type` PRECONDITION_FAILED.
 */
export function commitSpan(protocol: string, content: { readonly files: number; readonly rows: number }, publish: () => Promise<Commit>): Promise<Commit> {
  return inSpan('sluice.output.commit', { 'sluice.commit.protocol': protocol, 'sluice.files': content.files, 'sluice.rows': content.rows }, async (span) => {
    const commit = await publish();
    if (commit.snapshot) span.set({ 'sluice.output.snapshot': commit.snapshot });
    return commit;
  });
}
