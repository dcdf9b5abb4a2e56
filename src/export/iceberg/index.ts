export { writeIcebergTable, DEFAULT_COMMIT_ATTEMPTS, type IcebergCommitSummary, type IcebergDataFile, type IcebergMode, type IcebergTableInput, type IcebergTableOptions } from './writeIcebergTable.ts';
export type { TableStorage } from './storage.ts';
export { fileTableStorage } from './fileStorage.ts';
export { s3TableStorage, type S3TableLocation } from './s3Storage.ts';
export { IcebergCommitConflictError, IcebergMetadataError, IcebergNotATableError, IcebergPartitionError, IcebergSchemaConflictError, IcebergUnsupportedDestinationError } from './errors.ts';
export { icebergCommit, type IcebergCommitOptions } from './icebergCommit.ts';
export { destinationStorage } from './destinationStorage.ts';
