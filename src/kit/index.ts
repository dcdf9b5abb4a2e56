export { defineFormat, type Format, type FormatDescriptor } from './format.ts';
export {
  defineSink,
  type BeginOptions,
  type Destination,
  type Marker,
  type PublishCondition,
  type PublishOptions,
  type Versioned,
  type SinkDescriptor,
  type SharedArea,
  type SinkOptions,
  type StagedStream,
  type Transaction,
  type WriteOptions,
  type WriteResult,
} from './destination.ts';
export type { Registry } from './registry.ts';
export { ConfigError, DestinationCheckError, DestinationError, FormatError, KitError, messageOf, PreconditionFailedError, type ConfigIssue, type KitErrorOptions } from './errors.ts';
export { isSecretField, redact, REDACTED } from './redact.ts';
export { issuesOf, joinPath, parseConfig } from './parseConfig.ts';
export { decimalText, hex, isoTimestamp, valueText, type ValueText } from './valueText.ts';
export { coalesce, concat } from './bytes.ts';
export { emptyBatch } from './emptyBatch.ts';
export { textRows } from './textRows.ts';
