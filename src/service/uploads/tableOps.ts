import type { UploadColumn } from '../../protocol/index.ts';

/** Rows to insert: the body as the client sent it, CSV (header first) or NDJSON (one object a line). */
export interface InsertRows {
  format: 'csv' | 'ndjson';
  data: Buffer;
  /** CSV: the header's names, in file order (checked against the table's columns). */
  header?: readonly string[];
}

/**
 * What the uploads routes ask of the engine for a table created with a schema: create it empty
 * and typed, append rows (all or none: a bad row leaves the table as it was), empty it, drop it.
 * Malformed rows are EngineError 'bad_request' naming the line and the column.
 */
export interface UploadTableOps {
  createTable(team: string, name: string, columns: readonly UploadColumn[]): Promise<void>;
  insertRows(team: string, name: string, columns: readonly UploadColumn[], rows: InsertRows): Promise<{ rowsWritten: number }>;
  clearTable(team: string, name: string): Promise<void>;
  drop(team: string, name: string): Promise<void>;
  exists(team: string, name: string): Promise<boolean>;
}
