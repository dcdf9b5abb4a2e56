export { writeIcebergTable, DEFAULT_COMMIT_ATTEMPTS, type IcebergCommitSummary, type IcebergDataFile, type IcebergMode, type IcebergTableInput, type IcebergTableOptions } from './writeIcebergTable.ts';
export type { TableStorage } from './storage.ts';
export { IcebergCommitConflictError, IcebergMetadataError, IcebergNotATableError, IcebergPartitionError, IcebergSchemaConflictError, IcebergUnsupportedDestinationError } from './errors.ts';
export { icebergCommit, type IcebergCommitOptions } from './icebergCommit.ts';
export { destinationStorage, tableStorage } from './destinationStorage.ts';
export { IcebergCatalogError, type CatalogErrorCode } from './catalog/catalogErrors.ts';
export { catalogConfigSchema, catalogTarget, type CatalogConfig, type CatalogTarget, type RestCatalogConfig } from './catalog/catalogConfig.ts';
