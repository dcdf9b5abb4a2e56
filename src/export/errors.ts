import { KitError } from '../kit/index.ts';

/** Rows written differ from the row count the service reported; nothing was committed. */
export class RowCountMismatchError extends KitError {
  readonly expected: number;
  readonly actual: number;

  constructor(executionId: string, expected: number, actual: number) {
    super(
      'ROW_COUNT_MISMATCH',
      `export of execution ${executionId}: wrote ${actual} rows but the result has ${expected}; nothing was committed`,
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
