// The built-in connectors, listed explicitly: adding one is a line here, not a side-effect import.
import type { FormatDescriptor, Registry, SinkDescriptor } from '../src/kit/index.ts';
import { arrow } from './formats/arrow/index.ts';
import { csv } from './formats/csv/index.ts';
import { ndjson } from './formats/ndjson/index.ts';
import { parquet } from './formats/parquet/index.ts';
import { file } from './sinks/file/index.ts';
import { s3 } from './sinks/s3/index.ts';
import { azure } from './sinks/azure/index.ts';
import { gcs } from './sinks/gcs/index.ts';
import { stdout } from './sinks/stdout/index.ts';

export const formats = [parquet, arrow, csv, ndjson] as const satisfies readonly FormatDescriptor[];
export const sinks = [s3, azure, gcs, stdout, file] as const satisfies readonly SinkDescriptor[];

/** Every built-in connector, as the composition roots hand it to what validates and writes outputs. */
export const builtins: Registry = { formats, sinks };

export { arrow, azure, csv, file, gcs, ndjson, parquet, s3, stdout };
