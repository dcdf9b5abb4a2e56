import { KitError } from '../../kit/index.ts';

/** The table location holds objects but no Iceberg metadata: sluice will not write a table over them. */
export class IcebergNotATableError extends KitError {
  constructor(url: string, example: string) {
    super(
      'ICEBERG_NOT_A_TABLE',
      `${url} is not an Iceberg table: it holds objects (e.g. ${example}) but no metadata/v<N>.metadata.json; point the output at an empty location or an existing Iceberg table, or move those objects away`,
    );
  }
}

/** The table's current metadata file cannot be read as Iceberg format v2 metadata. */
export class IcebergMetadataError extends KitError {
  constructor(url: string, file: string, detail: string) {
    super(
      'ICEBERG_METADATA_INVALID',
      `Iceberg table ${url}: ${file} is not valid table metadata (${detail}); nothing was written. Restore that file from a backup or from the engine that wrote it, or write to a new table location`,
    );
  }
}

/** A result column's type differs from the type the table already has for it. */
export class IcebergSchemaConflictError extends KitError {
  readonly column: string;
  readonly tableType: string;
  readonly resultType: string;

  constructor(url: string, file: string, column: string, tableType: string, resultType: string) {
    super(
      'ICEBERG_SCHEMA_CONFLICT',
      `Iceberg table ${url} (${file}): column ${column} is ${tableType} in the table but ${resultType} in this result; nothing was written. Cast the column to the table's type in the query, rename it (a new column is added to the table), or write to a new table location`,
    );
    this.column = column;
    this.tableType = tableType;
    this.resultType = resultType;
  }
}

/** The table's partition spec differs from `partition_by`, or a column cannot be an identity partition. */
export class IcebergPartitionError extends KitError {
  constructor(url: string, detail: string) {
    super('ICEBERG_PARTITION_INVALID', `Iceberg table ${url}: ${detail}; nothing was written`);
  }
}

/** Other writers kept committing first; this run's files were removed and the table is unchanged. */
export class IcebergCommitConflictError extends KitError {
  constructor(url: string, file: string, attempts: number) {
    super(
      'ICEBERG_COMMIT_CONFLICT',
      `Iceberg table ${url}: lost the commit of ${file} to a concurrent writer ${attempts} time(s); nothing was committed and the table stays at its latest snapshot. Run again (or serialize the writers of this table)`,
      { retryable: true },
    );
  }
}

/** A sink's destination cannot hold an Iceberg table: it lacks the calls a table commit makes. */
export class IcebergUnsupportedDestinationError extends KitError {
  constructor(url: string, missing: readonly string[]) {
    super(
      'ICEBERG_UNSUPPORTED_DESTINATION',
      `${url} cannot hold an Iceberg table: its sink does not offer ${missing.join(', ')}; write the table to a local directory or S3, or drop table: iceberg`,
    );
  }
}

export { IcebergCatalogError } from './catalog/catalogErrors.ts';
