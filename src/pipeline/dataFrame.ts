import { RecordBatchStreamWriter, type RecordBatch, type Schema } from 'apache-arrow';
// Type only, erased at run time: nodejs-polars is an optional peer dependency, loaded on first use.
import type { DataFrame } from 'nodejs-polars';
import { ServiceError } from '../client/errors.ts';

export type PolarsDataFrame = DataFrame;

/** The few members of nodejs-polars this module calls. */
interface Polars {
  readIPCStream(body: Buffer): PolarsDataFrame;
}

export const POLARS_MISSING_MESSAGE = 'nodejs-polars is not installed: npm install nodejs-polars';

/** `toDataFrame()` was called without nodejs-polars installed. */
export class PolarsMissingError extends ServiceError {
  override readonly code = 'POLARS_MISSING';
}

/**
 * Collects `batches` into one Arrow IPC stream and has polars read it. Polars builds its columns
 * from Arrow buffers natively; building Series from JS arrays page by page was measured to leak
 * native memory. Batches are written as they arrive, so only the IPC bytes are held, not the batches too.
 */
export async function toDataFrame(schema: Schema, batches: AsyncIterable<RecordBatch>, load: () => Promise<unknown> = importPolars): Promise<PolarsDataFrame> {
  const polars = await loadPolars(load);
  const writer = new RecordBatchStreamWriter();
  writer.reset(undefined, schema);
  for await (const batch of batches) writer.write(batch);
  writer.finish();
  const bytes = writer.toUint8Array(true);
  return polars.readIPCStream(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
}

function importPolars(): Promise<unknown> {
  // A variable specifier keeps bundlers and the type checker from requiring the optional package.
  const name = 'nodejs-polars';
  return import(name);
}

async function loadPolars(load: () => Promise<unknown>): Promise<Polars> {
  let mod: unknown;
  try {
    mod = await load();
  } catch (error) {
    if (isModuleMissing(error)) throw new PolarsMissingError(POLARS_MISSING_MESSAGE, { method: 'toDataFrame', cause: error });
    throw error;
  }
  const pl = hasReadIpc(mod) ? mod : hasDefault(mod) && hasReadIpc(mod.default) ? mod.default : undefined;
  if (pl === undefined) throw new PolarsMissingError(`${POLARS_MISSING_MESSAGE} (the installed module has no readIPCStream)`, { method: 'toDataFrame' });
  return pl;
}

function isModuleMissing(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
}

function hasDefault(mod: unknown): mod is { default: unknown } {
  return typeof mod === 'object' && mod !== null && 'default' in mod;
}

function hasReadIpc(mod: unknown): mod is Polars {
  return typeof mod === 'object' && mod !== null && typeof (mod as { readIPCStream?: unknown }).readIPCStream === 'function';
}
