import { EngineError, type ServiceTables } from '../engine/types.ts';
import { csvHeader } from './csvHeader.ts';
import { UploadError } from './errors.ts';

export interface CsvUpload {
  team: string;
  /** The client's table_name; the table is `service.<team>.dataset_<tableName>`. */
  tableName: string;
  /** CSV text, header first. */
  data: string;
}

export interface IngestedTable {
  /** `service.<team>.dataset_<tableName>`. */
  fullName: string;
  columns: { name: string; type: string }[];
  rowCount: number;
  /** UTF-8 bytes of the uploaded text; counts toward the team's storage. */
  bytes: number;
}

/**
 * Loads CSV text as the table `service.<team>.dataset_<name>`, replacing one of that name
 * atomically (the engine reads it strictly and types each column; see engine/tables/csvIngest.ts). The
 * header is checked here first, so a bad name is refused before anything is written.
 */
export async function ingestCsv(tables: ServiceTables, up: CsvUpload): Promise<IngestedTable> {
  const names = csvHeader(up.data);
  const name = `dataset_${up.tableName}`;
  try {
    const t = await tables.ingestCsv(up.team, name, up.data, names);
    return { fullName: `service.${up.team}.${name}`, columns: t.columns, rowCount: t.rowCount, bytes: Buffer.byteLength(up.data) };
  } catch (err) {
    if (err instanceof EngineError && err.kind === 'bad_request') throw new UploadError(`Bad Request: ${err.message}`);
    throw err;
  }
}
