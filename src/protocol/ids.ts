/** Execution ids are ULIDs: 26 characters of Crockford base32 (no I, L, O, U), starting `01`. */
const ULID = /^01[0-9A-HJKMNP-TV-Z]{24}$/;

export function isExecutionId(id: string): boolean {
  return ULID.test(id);
}

/** Materialized view full names: `service.<team>.result_<x>`. */
export const VIEW_FULL_NAME = /^service\.([a-z0-9_]+)\.(result_[a-z0-9_]+)$/;
/** The short name a client gives on upsert. */
export const VIEW_SHORT_NAME = /^result_[a-z0-9_]+$/;
/** Team names (they become part of SQL identifiers and view names). */
export const TEAM_NAME = /^[a-z][a-z0-9_]*$/;
