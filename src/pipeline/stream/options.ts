/**
 * The options of a stream, of its `batches()` and of its Node stream, and the checks they pass
 * before anything is read; the wire the options choose.
 */
import { InvalidArgumentError } from '../../client/errors.ts';
import type { Wire } from '../../client/serviceClient.ts';
import type { ArrowTypeOptions } from '../../types/arrow.ts';
import type { DecodeOptions } from '../../types/decode.ts';
import type { ProgressListener } from '../progress.ts';

/**
 * Arrow pages when the service offers them, else JSON (the real service answers JSON to any Accept).
 * The local service pre-encodes Arrow pages as it does JSON ones, and `.batches()` and exports read
 * them several times as fast as JSON pages (the figures: docs/performance.md, from
 * `npm run bench -- parallel`); values are the same on either wire.
 */
export const DEFAULT_WIRE: Wire = 'auto';

export interface StreamOptions {
  /** Page requests in flight at most (default 4). */
  concurrency?: number;
  /** Pages fetched ahead beyond `concurrency`, waiting for a slow consumer (default 2). */
  prefetch?: number;
  /** Rows per page asked for; the service may lower it. Default: the service's page cap. */
  pageSize?: number;
  /**
   * Deliver rows from this offset of the result on (a resumed export). Pages stay on the grid
   * of `pageSize` when it is given: the page holding `startOffset` is read from its start and
   * its leading rows skipped, so batches are cut where a read from row 0 cuts them.
   */
  startOffset?: number;
  /**
   * Deliver only the rows before this offset of the result (one part of an export): pages are
   * planned up to it and the read ends there. Pages stay on the grid of `pageSize` as for `startOffset`.
   */
  endOffset?: number;
  /** Only these columns, in this order. */
  columns?: string[];
  /** Server-side filter (protocol.md section 4). */
  filters?: string;
  /** Server-side order, `col [asc|desc], ...`. */
  sortBy?: string;
  /** Stops waiting and every page request; the stream rejects with an `AbortError`. */
  signal?: AbortSignal;
  /** On abort, also cancel the execution if it is still running (default false). */
  cancelOnAbort?: boolean;
  /** Read a COMPLETED_PARTIAL (truncated) result instead of failing with PartialResultError. */
  allowPartialResults?: boolean;
  /** Called after every page handed to the consumer. */
  onProgress?: ProgressListener;
  /** Called once the execution is known (started or found), before waiting for it: to log or cancel it. */
  onExecution?: (executionId: string, how: { started: boolean }) => void;
  /** `date` values in rows as `YYYY-MM-DD` strings (default) or Dates at UTC midnight. */
  dates?: DecodeOptions['dates'];
  /**
   * Timestamps in rows as Dates (`auto`, the default: milliseconds; a zoneless timestamp(p > 3) as
   * its exact text), or exactly: `micros` / `nanos`, a bigint count since the epoch (UTC);
   * `string`, the wire text. Batches keep every digit whatever this says.
   */
  timestamps?: DecodeOptions['timestamps'];
  /** uint256 / int256 in Arrow as Utf8 text (default) or Decimal256(76, 0). */
  int256As?: ArrowTypeOptions['int256As'];
  /**
   * Result pages of `batches()` as Arrow streams when the service offers them (`auto`: JSON from a
   * service that answers JSON or 406), only Arrow (`arrow`: a service without Arrow pages is an
   * error), or only JSON (`json`). The default is `auto` (see `DEFAULT_WIRE`). Batches hold the same values
   * whichever wire carried them. `rows()` reads JSON pages, and so does `batches({ batchSize })`
   * under `auto` (it re-cuts batches across pages).
   */
  wire?: Wire;
  /**
   * @deprecated Accepted and ignored, with one `DeprecationWarning` per process: pages are decoded on
   * the calling thread (decode threads took longer, and more CPU, than the calling thread alone).
   * To use more cores, run a job sharded (`sluice run --processes N`).
   */
  decodeThreads?: number;
}

export interface BatchOptions {
  /** Rows per RecordBatch; default: one batch per page. */
  batchSize?: number;
}

export interface NodeStreamOptions extends BatchOptions {
  /** Arrow RecordBatches instead of rows (`batchSize` then applies). */
  batches?: boolean;
}

/**
 * The wire to read. A service's Arrow pages carry the default mapping (uint256/int256 as text):
 * with `int256As: 'decimal256'` only the JSON wire gives the batches asked for, so `auto` reads
 * JSON, and an explicit `arrow` is refused instead of failing on the first page.
 */
export function streamWire(options: StreamOptions): Wire {
  const wire = options.wire ?? DEFAULT_WIRE;
  if (options.int256As !== 'decimal256') return wire;
  if (wire === 'arrow') {
    throw new InvalidArgumentError(`int256As 'decimal256' is built from JSON pages, which the Arrow wire does not carry: use wire 'auto' or 'json'`, { method: 'stream' });
  }
  return 'json';
}

/** `batches()`'s options, checked before anything is read. */
export function checkBatchSize(batchSize: number | undefined, wire: Wire): void {
  if (batchSize !== undefined && !(Number.isInteger(batchSize) && batchSize > 0)) {
    throw new InvalidArgumentError(`batchSize must be a positive integer, got ${batchSize}`, { method: 'batches' });
  }
  if (wire === 'arrow' && batchSize !== undefined) {
    throw new InvalidArgumentError(`batchSize re-cuts batches across pages, which the Arrow wire does not do: leave batchSize out or use wire 'auto' or 'json'`, {
      method: 'batches',
    });
  }
}

/** Whether the process was already told that `decodeThreads` is ignored (Node warns of a deprecation once). */
let decodeThreadsWarned = false;

/** The stream's options (and `seek()`'s), checked before anything is read. */
export function checkOptions(options: StreamOptions): void {
  if (options.decodeThreads !== undefined && !decodeThreadsWarned) {
    decodeThreadsWarned = true;
    process.emitWarning(
      'stream option decodeThreads is ignored: pages are decoded on the calling thread. Remove the option; to use more cores, run a job sharded (sluice run --processes N).',
      { type: 'DeprecationWarning', code: 'SLUICE_DECODE_THREADS' },
    );
  }
  const positive = (name: string, v: number | undefined) => {
    if (v !== undefined && !(Number.isInteger(v) && v > 0)) throw new InvalidArgumentError(`${name} must be a positive integer, got ${v}`, { method: 'stream' });
  };
  positive('concurrency', options.concurrency);
  positive('pageSize', options.pageSize);
  if (options.startOffset !== undefined && !(Number.isInteger(options.startOffset) && options.startOffset >= 0)) {
    throw new InvalidArgumentError(`startOffset must be a non-negative integer, got ${options.startOffset}`, { method: 'stream' });
  }
  if (options.endOffset !== undefined && !(Number.isInteger(options.endOffset) && options.endOffset > (options.startOffset ?? 0))) {
    throw new InvalidArgumentError(`endOffset must be an integer above startOffset (${options.startOffset ?? 0}), got ${options.endOffset}`, { method: 'stream' });
  }
  if (options.prefetch !== undefined && !(Number.isInteger(options.prefetch) && options.prefetch >= 0)) {
    throw new InvalidArgumentError(`prefetch must be a non-negative integer, got ${options.prefetch}`, { method: 'stream' });
  }
}
