// The ground connectors stand on: formats (bytes from Arrow batches) and sinks (where the bytes go).
// There is deliberately no Source here. Every row sluice reads comes through one wire contract, the
// service's, and the pipeline is the one place that dispatches on its four kinds of source (an
// execution, SQL, a saved query, a view refresh: `StreamSource` in src/pipeline/source.ts). A
// pluggable Source would be a second, untyped path into the pipeline beside the typed one, with
// nothing to plug into it; it belongs here the day a second protocol does.
export { defineFormat, type Format, type FormatDescriptor } from './format.ts';
export { defineSink, type SinkDescriptor, type SinkOptions } from './sink.ts';
export {
  ANY_TARGET,
  isStreamSink,
  type CheckOptions,
  type ObjectInfo,
  type ObjectStore,
  type OutputLink,
  type PutCondition,
  type PutOptions,
  type PutResult,
  type Sink,
  type StoredObject,
  type StreamSink,
} from './store.ts';
export type { Registry } from './registry.ts';
export { ConfigError, DestinationCheckError, DestinationError, FormatError, KitError, messageOf, PreconditionFailedError, type ConfigIssue, type KitErrorOptions } from './errors.ts';
export { isSecretField, redact, REDACTED } from './redact.ts';
export { issuesOf, joinPath, parseConfig } from './parseConfig.ts';
export { decimalText, hex, isoTimestamp, valueText, type ValueText } from './valueText.ts';
export { coalesce, concat } from './bytes.ts';
export { lazyStore } from './lazyStore.ts';
export { emptyBatch } from './emptyBatch.ts';
export { textRows } from './textRows.ts';
export { processRuns } from './processRuns.ts';
