export {
  openExport,
  writeExport,
  type OpenedExport,
  type OpenExportOptions,
  type ExportInput,
  type ExportMeta,
  type ExportProgress,
  type ExportSummary,
  type WriteExportOptions,
} from './writeExport.ts';
export { checkOutputs } from './checkOutputs.ts';
export { describeOutput, outputConfigSchema, resolveOutput, TABLES, type OutputConfig, type OutputMode, type ResolvedOutput, type Table } from './outputConfig.ts';
export type { Commit, CommitProtocol, CommittedColumn, CursorState, PreparedData } from './commit.ts';
export { manifestCommit, unconditionalManifestCommit } from './manifestCommit.ts';
export { commitFor } from './commitFor.ts';
export { commitShards, sameExport, type CommitMode, type ShardCommitOutcome } from './shardCommit.ts';
export { MANIFEST_NAME, SUCCESS_NAME, type Manifest, type ManifestField } from './manifest.ts';
export type { FileEntry } from './partFile.ts';
export { escapeHivePathName, hiveSegment, HIVE_DEFAULT_PARTITION } from './hive.ts';
export { partFileName } from './partFileName.ts';
export { nativeOutputReason, nativeRoute, type NativeMode, type NativeRoute } from './nativeExport.ts';
export { AppendConflictError, ManifestInvalidError, RowCountMismatchError, SchemaDriftError } from './errors.ts';
export * from './iceberg/index.ts';
export { planParts, type PartRange } from './partPlan.ts';
export { OUTPUT_SPLIT_RULES, outputSplitBlocks, serialReason, type DestinationTraits, type SplitBlock, type SplitWay } from './splitRule.ts';
export { checkOutput, openOutput, type OpenedOutput } from './openOutput.ts';
export type { BeginOptions, Destination, Marker, PublishCondition, PublishOptions, SharedArea, StagedStream, Transaction, Versioned, WriteOptions, WriteResult } from './destination.ts';
export * from './storage/index.ts';
