// Arrow pages: the rows of a page as an Arrow IPC stream, built from DuckDB's vectors column by
// column (no row objects). The schema and the Arrow layout of every value are the connector's own
// (src/types: arrowSchema, columnBuilder), so a file written from Arrow pages holds exactly the
// values of one written from JSON pages. Columns of the types whose DuckDB layout is that Arrow
// layout (integers, floats, booleans, dates, timestamps, decimals, varchar) are copied from the
// vectors' memory in bulk (arrowColumns.ts); every other column is rendered by DuckDB as its JSON
// page text (encode.ts) and decoded per value by the connector's decoder of that type (booleans,
// integers and floats taken per value as read): one definition of each value, whichever way it travels.
import type { DuckDBConnection } from '@duckdb/node-api';
import { ArrowBatch, batchLayout, ipcStream, type BatchLayout } from './arrowBatch.ts';
import { chunkFetched } from '../memory/chunkGarbage.ts';
import type { PagePlan, StoredColumns } from './pageQuery.ts';

export interface ArrowPageBody {
  /** The IPC stream: schema, one record batch with the page's rows, end-of-stream. */
  bytes: Uint8Array;
  rowCount: number;
}

/**
 * Builds the Arrow IPC stream of a planned page. The columns vectorColumn() reads straight from
 * DuckDB's vectors are taken that way; the others per value. When a value of the first kind
 * must take the per-value path (a date outside years 1-9999, say), the page is built again with
 * every column per value.
 */
export async function buildArrowPage(conn: DuckDBConnection, stored: StoredColumns, plan: PagePlan): Promise<ArrowPageBody> {
  const columns = { stored, cols: plan.cols, columnNames: plan.columnNames, columnTypes: plan.columnTypes };
  const layout = batchLayout(columns, true);
  if (layout.direct.some(Boolean)) {
    const page = await buildPage(conn, plan, layout);
    if (page !== undefined) return page;
  }
  return (await buildPage(conn, plan, batchLayout(columns, false)))!;
}

/** The page in `layout`; undefined when a vector column refused a value. */
async function buildPage(conn: DuckDBConnection, plan: PagePlan, layout: BatchLayout): Promise<ArrowPageBody | undefined> {
  const result = await conn.stream(`SELECT ${layout.select} FROM ${plan.source} AS page ORDER BY ${plan.order}`);
  const batch = new ArrowBatch(layout);
  for (;;) {
    const chunk = await result.fetchChunk();
    if (!chunk || chunk.rowCount === 0) break;
    chunkFetched();
    if (!batch.append(chunk, 0, chunk.rowCount)) return undefined;
  }
  return { bytes: ipcStream(batch.finish()), rowCount: batch.rowCount };
}
