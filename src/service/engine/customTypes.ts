// The 256-bit integer and year-to-month interval types the protocol needs but DuckDB lacks.
// A plain `CREATE TYPE uint256 AS BIGNUM` alias is lost in result types, so each is a
// single-member UNION over its storage type: the member tag survives into result column types
// (and into stored result files, which hold the union structurally), naming the type.
import { DuckDBTypeId, type DuckDBType, type DuckDBUnionType } from '@duckdb/node-api';

export const UINT256_MAX = (1n << 256n) - 1n;
export const INT256_MIN = -(1n << 255n);
export const INT256_MAX = (1n << 255n) - 1n;

const CUSTOM_TAGS = new Set(['uint256', 'int256', 'interval_year_to_month']);

/** The tag of one of our single-member union types, or undefined for any other type. */
export function customUnionTag(type: DuckDBType): string | undefined {
  if (type.typeId !== DuckDBTypeId.UNION) return undefined;
  const union: DuckDBUnionType = type;
  if (union.memberCount !== 1) return undefined;
  const tag = union.memberTags[0]!;
  return CUSTOM_TAGS.has(tag) ? tag : undefined;
}

/**
 * Statements creating the types and the constructor macros in the main database (persisted,
 * so every connection of the instance sees them). Macros check the range and fail loudly:
 * `uint256('123')`, `int256(-5)`, `interval_year_to_month(INTERVAL '1 year 2 months')`.
 */
export function customTypeStatements(existingTypes: ReadonlySet<string>): string[] {
  const out: string[] = [];
  if (!existingTypes.has('uint256')) out.push('CREATE TYPE uint256 AS UNION(uint256 BIGNUM)');
  if (!existingTypes.has('int256')) out.push('CREATE TYPE int256 AS UNION(int256 BIGNUM)');
  if (!existingTypes.has('interval_year_to_month')) {
    out.push('CREATE TYPE interval_year_to_month AS UNION(interval_year_to_month INTEGER)');
  }
  out.push(
    // Compared through its text: DuckDB 1.5 folds a comparison of a cast column with a constant
    // into the column's own type, and a 2^256 constant does not fit a HUGEINT ("bignum too large").
    `CREATE OR REPLACE MACRO uint256(v) AS CASE
       WHEN v::BIGNUM::VARCHAR::BIGNUM < 0::BIGNUM OR v::BIGNUM::VARCHAR::BIGNUM > '${UINT256_MAX}'::BIGNUM
       THEN error('uint256 out of range [0, 2^256-1]: ' || v::VARCHAR)
       ELSE v::BIGNUM::uint256 END`,
    `CREATE OR REPLACE MACRO int256(v) AS CASE
       WHEN v::BIGNUM::VARCHAR::BIGNUM < '${INT256_MIN}'::BIGNUM OR v::BIGNUM::VARCHAR::BIGNUM > '${INT256_MAX}'::BIGNUM
       THEN error('int256 out of range [-2^255, 2^255-1]: ' || v::VARCHAR)
       ELSE v::BIGNUM::int256 END`,
    `CREATE OR REPLACE MACRO interval_year_to_month(v) AS
       (datepart('year', v::INTERVAL) * 12 + datepart('month', v::INTERVAL))::INTEGER::interval_year_to_month`,
  );
  return out;
}
