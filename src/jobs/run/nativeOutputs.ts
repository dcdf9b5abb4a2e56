import type { Schema } from 'apache-arrow';
import type { Job } from '../../config/jobSchema.ts';
import { NATIVE_PAGES, nativeOutputReason, nativeRoute } from '../../export/nativeExport.ts';
import type { ResolvedOutput } from '../../export/outputConfig.ts';
import type { NativePages } from '../../pipeline/nativeWire/duckdbColumns.ts';
import type { RangeReader } from '../../pipeline/stream.ts';
import type { ServedWire } from '../plan/servedWire.ts';
import { whyOneRead } from '../output/splitRule.ts';

/**
 * Outputs the one read would feed that the native path writes instead (src/export/nativeExport.ts):
 * they read their parts by row ranges themselves. Only where nothing of the run needs to see the
 * rows (no job feature that reads once for all, no drift reshaping the output's rows): the split
 * rule's `parts` way.
 */
export function mayBeNative(job: Job, output: ResolvedOutput): boolean {
  return whyOneRead(job) === undefined && nativeOutputReason(output) === undefined;
}

/** Whether an output is written natively, now that the result's schema and the wire are known (`reshaped`: a job feature reshapes its rows). */
export function writtenNatively(output: ResolvedOutput, schema: Schema, reader: RangeReader, reshaped: boolean): boolean {
  if (reshaped) return false;
  return nativeRoute(output, schema, reader).native;
}

/** How an output's rows would be decoded and written, for `--plan`: the native path, or the general one and why. */
export interface DecodePlan {
  readonly path: 'native' | 'general';
  /** The pages the native path reads (the service's CSV pages unless told otherwise). */
  readonly pages?: NativePages;
  readonly why: string;
}

/**
 * The path for `--plan`. With what the service answered the run's first-page request (`served`:
 * see src/jobs/plan/servedWire.ts), the run's own choice (`nativeRoute`, as `writtenNatively`);
 * without it, the condition the run settles it by, and why the service was not asked.
 */
export function decodePlan(job: Job, output: ResolvedOutput, served?: ServedWire): DecodePlan {
  const reason = whyOneRead(job) ?? nativeOutputReason(output);
  if (reason !== undefined) return { path: 'general', why: reason };
  if (job.wire === 'arrow') return { path: 'general', why: 'wire: arrow (Arrow pages, decoded by apache-arrow)' };
  if (job.wire === 'json') return { path: 'general', why: 'wire: json asks for JSON pages decoded in JS; the native path is chosen with wire auto' };
  if (served !== undefined && 'reader' in served) {
    const route = nativeRoute(output, served.schema, served.reader);
    if (route.native) return { path: 'native', pages: route.pages, why: `the service answered the first page as JSON (it serves no Arrow pages): ${nativeWhy(route.pages)}` };
    if (served.reader.options.wire === 'arrow') return { path: 'general', why: 'the service serves Arrow pages (it answered the first page with one), decoded by apache-arrow' };
    return { path: 'general', why: route.reason };
  }
  if (served?.embedded === true) {
    return {
      path: 'general',
      why: 'the embedded service serves Arrow pages, which the run asks for on its first page and decodes with apache-arrow; a first page holding a value Arrow cannot hold comes as JSON, and the output is then written natively',
    };
  }
  return {
    path: 'native',
    pages: NATIVE_PAGES,
    why: `from a service without Arrow pages, ${nativeWhy(NATIVE_PAGES)}; over Arrow pages, the general path${served === undefined ? '' : ` (not asked: ${served.unknown})`}`,
  };
}

function nativeWhy(pages: NativePages): string {
  return `DuckDB writes the Parquet from the service's ${pages.toUpperCase()} pages, where every column has an exact DuckDB type`;
}
