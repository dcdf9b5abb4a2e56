/**
 * Typed streaming of results: an execution (or SQL, or a saved query) as an async iterable of typed
 * rows or Arrow batches, fetched page by page with bounded concurrency, in order, with backpressure.
 */
export { stream, ResultStream, type StreamOptions, type BatchOptions, type NodeStreamOptions, type ResultInfo, type Ready, type RangeReader } from './stream.ts';
export type { StreamSource, StreamClient } from './source.ts';
export type { Progress, ProgressListener } from './progress.ts';
export { fetchOrdered, PageSequenceError, DEFAULT_CONCURRENCY, DEFAULT_PREFETCH } from './fetchOrdered.ts';
export type { FetchPage, FetchOrderedOptions, OrderedPage, PageRequest, PageShape } from './fetchOrdered.ts';
export { PolarsMissingError, POLARS_MISSING_MESSAGE, type PolarsDataFrame } from './dataFrame.ts';
