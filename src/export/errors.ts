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
