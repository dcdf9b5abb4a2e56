import { KitError, type KitErrorOptions } from '../../../kit/index.ts';

export type CatalogErrorCode =
  /** The catalog (or its token endpoint) did not answer. */
  | 'CATALOG_UNREACHABLE'
  /** The catalog or its token endpoint refused the credentials (401/403, a failed token exchange). */
  | 'CATALOG_AUTH_REFUSED'
  /** The warehouse, namespace or table is not there (and may not be created). */
  | 'CATALOG_NOT_FOUND'
  /** The catalog answered something this client cannot use (not the REST protocol, a rejected request). */
  | 'CATALOG_REJECTED'
  /** A commit the catalog did not take after every attempt, or whose outcome is unknown. */
  | 'CATALOG_COMMIT_FAILED';

/** An Iceberg REST catalog could not serve an output; the message names the catalog, the table and what to do. */
export class IcebergCatalogError extends KitError {
  /** Data files written for a commit that did not happen (relative to the table location): safe to delete once no run uses them. */
  readonly orphans: readonly string[];
  /** A commit whose outcome is unknown: its files must stay (the table may reference them). */
  readonly unknownOutcome: boolean;

  constructor(code: CatalogErrorCode, catalog: string, detail: string, options: KitErrorOptions & { orphans?: readonly string[]; unknownOutcome?: boolean } = {}) {
    const { orphans = [], unknownOutcome = false, ...rest } = options;
    const listed = orphans.length === 0 ? '' : `; the data files this run wrote are left in place (delete those no snapshot of the table references): ${orphans.join(', ')}`;
    super(code, `Iceberg catalog ${catalog}: ${detail}${listed}`, rest);
    this.orphans = orphans;
    this.unknownOutcome = unknownOutcome;
  }
}
