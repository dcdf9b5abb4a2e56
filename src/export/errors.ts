import { KitError } from '../kit/index.ts';

/** Rows written differ from the row count the service reported; nothing was committed. */
export class RowCountMismatchError extends KitError {
  readonly expected: number;
  readonly actual: number;

  /** `where`: the part of the export that came out short or long (`part 3 (rows 750 to 1000)`). */
  constructor(executionId: string, expected: number, actual: number, where?: string) {
    super(
      'ROW_COUNT_MISMATCH',
      where === undefined
        ? `export of execution ${executionId}: wrote ${actual} rows but the result has ${expected}; nothing was committed`
        : `export of execution ${executionId}: ${where} got ${actual} rows from the service, expected ${expected}; nothing was committed`,
    );
    this.expected = expected;
    this.actual = actual;
  }
}

/** The previous `_manifest.json` at the destination is not one this version can read. */
export class ManifestInvalidError extends KitError {
  constructor(url: string, detail: string) {
    super(
      'MANIFEST_INVALID',
      `${url}/_manifest.json is not a valid sluice manifest (${detail}); remove it or point the export elsewhere`,
    );
  }
}

/**
 * An append that would mix outputs: the committed output was written by another job, or with another
 * format or partitioning. Nothing was written.
 */
export class AppendConflictError extends KitError {
  readonly url: string;

  constructor(url: string, detail: string) {
    super('APPEND_CONFLICT', `cannot append to ${url}: ${detail}`);
    this.url = url;
  }
}

/**
 * A result whose columns differ from the committed output's in a way the output cannot hold: a
 * changed type, a dropped column, or a new column in a format that cannot add one. Nothing was written.
 */
export class SchemaDriftError extends KitError {
  readonly url: string;
  readonly column: string;

  constructor(url: string, column: string, detail: string) {
    super('SCHEMA_DRIFT', `cannot append to ${url}: column ${JSON.stringify(column)} ${detail}`);
    this.url = url;
    this.column = column;
  }
}
