// SQL expressions that render stored values as protocol.md section 5 JSON, and as the text of
// a CSV field, inside DuckDB: pages are built by the engine without moving rows through JS.
// Every expression yields VARCHAR and is NULL exactly when the value is NULL.
//
// Decisions beyond section 5 (documented for the client):
// - real/double NaN and +-Infinity are the JSON strings "NaN", "Infinity", "-Infinity".
// - hugeint, uhugeint, bignum, ubigint, decimal, uint256, int256: JSON strings of digits.
// - interval day to second: "D HH:MM:SS.ffffff" like Trino ("-1 02:03:04.567890"), exact to
//   the microsecond; with a month part "M months D HH:MM:SS.ffffff" ("14 months 3 01:02:03.000004"):
//   a month has no fixed length, so it is never folded into days; interval year to month: "Y-M".
// - time(p): "HH:MM:SS.ffffff", and "24:00:00.000000" for the end of the day; timestamps carry exactly p fraction digits; with time zone in
//   UTC with the suffix " UTC".
// - dates and timestamps outside years 1-9999: the year as ISO 8601 counts it (astronomical: 1 BC
//   is 0000, 2 BC is -0001), at least 4 digits, a '-' before a negative one and no '+' ("10000-01-01",
//   "-0001-12-31 10:00:00.000000"): DuckDB casts that text back to the same value, the client decodes
//   it. DuckDB's own text ("0002-12-31 (BC)") is read by neither the client nor most readers.
// - map keys are the text of the key; json is a JSON string holding the JSON text.
import { DuckDBTypeId, type DuckDBType } from '@duckdb/node-api';
import { sqlString } from '../../sql.ts';
import { customUnionTag } from '../customTypes.ts';

/** Types whose JSON is their text as DuckDB casts it (booleans, integers up to BIGINT and UINTEGER). */
const BARE_TEXT: ReadonlySet<DuckDBTypeId> = new Set([
  DuckDBTypeId.BOOLEAN,
  DuckDBTypeId.TINYINT,
  DuckDBTypeId.SMALLINT,
  DuckDBTypeId.INTEGER,
  DuckDBTypeId.BIGINT,
  DuckDBTypeId.UTINYINT,
  DuckDBTypeId.USMALLINT,
  DuckDBTypeId.UINTEGER,
]);

/**
 * Types whose JSON is their text in quotes: texts made only of digits, signs, '.', ':', '-', ' '
 * and hex need no JSON escaping.
 */
const QUOTED_TEXT: ReadonlySet<DuckDBTypeId> = new Set([
  DuckDBTypeId.UBIGINT,
  DuckDBTypeId.HUGEINT,
  DuckDBTypeId.UHUGEINT,
  DuckDBTypeId.BIGNUM,
  DuckDBTypeId.DECIMAL,
  DuckDBTypeId.BLOB,
  DuckDBTypeId.DATE,
  DuckDBTypeId.TIME,
  DuckDBTypeId.TIME_NS,
  DuckDBTypeId.TIME_TZ,
  DuckDBTypeId.TIMESTAMP_S,
  DuckDBTypeId.TIMESTAMP_MS,
  DuckDBTypeId.TIMESTAMP,
  DuckDBTypeId.TIMESTAMP_NS,
  DuckDBTypeId.TIMESTAMP_TZ,
  DuckDBTypeId.INTERVAL,
  DuckDBTypeId.UUID,
]);

const TS_FORMAT: Partial<Record<DuckDBTypeId, string>> = {
  [DuckDBTypeId.TIMESTAMP_S]: '%Y-%m-%d %H:%M:%S',
  [DuckDBTypeId.TIMESTAMP_MS]: '%Y-%m-%d %H:%M:%S.%g',
  [DuckDBTypeId.TIMESTAMP]: '%Y-%m-%d %H:%M:%S.%f',
  [DuckDBTypeId.TIMESTAMP_NS]: '%Y-%m-%d %H:%M:%S.%n',
};

function isNested(type: DuckDBType): boolean {
  switch (type.typeId) {
    case DuckDBTypeId.LIST:
    case DuckDBTypeId.ARRAY:
    case DuckDBTypeId.MAP:
    case DuckDBTypeId.STRUCT:
      return true;
    case DuckDBTypeId.UNION:
      return customUnionTag(type) === undefined;
    default:
      return false;
  }
}

/**
 * `[-]D HH:MM:SS.ffffff`, exact to the microsecond (days of 24 hours, as Trino). A month has no
 * fixed length, so an interval with a month part says so in front: `14 months 3 01:02:03.000004`
 * (months, then the day-to-second part). DuckDB keeps months, days and microseconds apart;
 * epoch_us counts a month as 30 days, taken back out here.
 */
function intervalDayToSecond(v: string): string {
  const months = `(datepart('year', ${v}) * 12 + datepart('month', ${v}))::BIGINT`;
  const dt = `(epoch_us(${v}) - ${months} * 2592000000000)`;
  const us = `abs(${dt})`;
  const part = (div: string, mod: string, width: number): string =>
    `lpad(((${us} // ${div}) % ${mod})::VARCHAR, ${width}, '0')`;
  const dayToSecond = `(CASE WHEN ${dt} < 0 THEN '-' ELSE '' END || (${us} // 86400000000)::VARCHAR || ' ' || ${part('3600000000', '24', 2)} || ':' || ${part('60000000', '60', 2)} || ':' || ${part('1000000', '60', 2)} || '.' || ${part('1', '1000000', 6)})`;
  return `(CASE WHEN ${months} = 0 THEN '' ELSE ${months}::VARCHAR || ' months ' END || ${dayToSecond})`;
}

/** `[-]YYYY` of the astronomical year, at least 4 digits (see the header). */
function isoYear(v: string): string {
  return `(CASE WHEN year(${v}) < 0 THEN '-' ELSE '' END || printf('%04d', abs(year(${v}))))`;
}

/**
 * `strftime(v, '%Y' + rest)` with the year as isoYear writes it: strftime leaves a negative year
 * unpadded ("-5") and the default cast writes "(BC)". Years from 1 (and infinities) take the plain path.
 */
function withIsoYear(v: string, plain: string, rest: string): string {
  return `(CASE WHEN year(${v}) < 1 THEN ${isoYear(v)} || strftime(${v}, '${rest}') ELSE ${plain} END)`;
}

/** The text of a value as a CSV field holds it (unquoted), and as result_set_bytes counts it. */
export function textExpr(v: string, type: DuckDBType, depth = 0): string {
  if (isNested(type)) return jsonExpr(v, type, depth);
  switch (type.typeId) {
    case DuckDBTypeId.FLOAT:
    case DuckDBTypeId.DOUBLE:
      return `(CASE WHEN isnan(${v}) THEN 'NaN' WHEN isinf(${v}) THEN (CASE WHEN ${v} > 0 THEN 'Infinity' ELSE '-Infinity' END) ELSE ${v}::VARCHAR END)`;
    case DuckDBTypeId.BLOB:
      return `('0x' || lower(hex(${v})))`;
    case DuckDBTypeId.TIME:
      // DuckDB's TIME holds 24:00:00 (the end of a day), which date arithmetic would wrap to 00:00.
      return `(CASE WHEN ${v} = TIME '24:00:00' THEN '24:00:00.000000' ELSE strftime(DATE '1970-01-01' + ${v}, '%H:%M:%S.%f') END)`;
    case DuckDBTypeId.DATE:
      return withIsoYear(v, `${v}::VARCHAR`, '-%m-%d');
    case DuckDBTypeId.TIMESTAMP_NS:
      // Years 1677-2262 only.
      return `strftime(${v}, '${TS_FORMAT[type.typeId]}')`;
    case DuckDBTypeId.TIMESTAMP_S:
    case DuckDBTypeId.TIMESTAMP_MS:
    case DuckDBTypeId.TIMESTAMP: {
      const format = TS_FORMAT[type.typeId]!;
      // strftime binds a TIMESTAMP_S / _MS to its TIMESTAMP_NS form, which fails outside 1677-2262.
      const us = type.typeId === DuckDBTypeId.TIMESTAMP ? v : `${v}::TIMESTAMP`;
      return withIsoYear(us, `strftime(${us}, '${format}')`, format.slice(2));
    }
    case DuckDBTypeId.TIMESTAMP_TZ: {
      // timezone('UTC', v) fails at DuckDB's extremes (294247-01-10 and 290309 BC); the instant's
      // microseconds as a TIMESTAMP are the same wall time in UTC, at every finite value.
      const utc = `(CASE WHEN isfinite(${v}) THEN make_timestamp(epoch_us(${v})) ELSE timezone('UTC', ${v}) END)`;
      return `(${withIsoYear(utc, `strftime(${utc}, '%Y-%m-%d %H:%M:%S.%f')`, '-%m-%d %H:%M:%S.%f')} || ' UTC')`;
    }
    case DuckDBTypeId.INTERVAL:
      return intervalDayToSecond(v);
    case DuckDBTypeId.UNION: {
      const tag = customUnionTag(type)!;
      const inner = `union_extract(${v}, ${sqlString(tag)})`;
      if (tag !== 'interval_year_to_month') return `${inner}::VARCHAR`;
      return `(CASE WHEN ${inner} < 0 THEN '-' ELSE '' END || (abs(${inner}) // 12)::VARCHAR || '-' || (abs(${inner}) % 12)::VARCHAR)`;
    }
    default:
      return `${v}::VARCHAR`;
  }
}

/**
 * jsonExpr(v, type) made from the value's text `t` (textExpr(v, type), computed once below the
 * row's JSON, CSV field and byte count): the same JSON for every value, NULL included. Undefined
 * for the types whose JSON is not made from their text (jsonExpr(v, type) is used then).
 */
export function jsonFromText(t: string, type: DuckDBType): string | undefined {
  if (isNested(type)) return t;
  if (BARE_TEXT.has(type.typeId)) return t;
  if (QUOTED_TEXT.has(type.typeId)) return `('"' || ${t} || '"')`;
  switch (type.typeId) {
    case DuckDBTypeId.FLOAT:
    case DuckDBTypeId.DOUBLE:
      // A finite value's text is never one of the three.
      return `(CASE WHEN ${t} IN ('NaN', 'Infinity', '-Infinity') THEN '"' || ${t} || '"' ELSE ${t} END)`;
    case DuckDBTypeId.UNION: {
      const tag = customUnionTag(type);
      return tag === 'uint256' || tag === 'int256' || tag === 'interval_year_to_month' ? `('"' || ${t} || '"')` : undefined;
    }
    default:
      return `to_json(${t})::VARCHAR`;
  }
}

/** JSON text of a value (NULL when the value is NULL). */
export function jsonExpr(v: string, type: DuckDBType, depth = 0): string {
  const x = `x${depth}`;
  if (BARE_TEXT.has(type.typeId)) return `${v}::VARCHAR`;
  if (QUOTED_TEXT.has(type.typeId)) return `('"' || ${textExpr(v, type, depth)} || '"')`;
  switch (type.typeId) {
    case DuckDBTypeId.FLOAT:
    case DuckDBTypeId.DOUBLE:
      return `(CASE WHEN isnan(${v}) THEN '"NaN"' WHEN isinf(${v}) THEN (CASE WHEN ${v} > 0 THEN '"Infinity"' ELSE '"-Infinity"' END) ELSE ${v}::VARCHAR END)`;
    case DuckDBTypeId.LIST:
    case DuckDBTypeId.ARRAY:
      return `('[' || array_to_string(list_transform(${v}, lambda ${x}: coalesce(${jsonExpr(x, type.valueType, depth + 1)}, 'null')), ',') || ']')`;
    case DuckDBTypeId.MAP:
      return `('{' || array_to_string(list_transform(map_entries(${v}), lambda ${x}: to_json(${textExpr(`${x}.key`, type.keyType, depth + 1)})::VARCHAR || ':' || coalesce(${jsonExpr(`${x}.value`, type.valueType, depth + 1)}, 'null')), ',') || '}')`;
    case DuckDBTypeId.STRUCT: {
      if (type.entryNames.length === 0) return `(CASE WHEN ${v} IS NULL THEN NULL ELSE '{}' END)`;
      const fields = type.entryNames.map((name, i) => {
        const key = sqlString(`${JSON.stringify(name)}:`);
        const value = jsonExpr(`struct_extract(${v}, ${sqlString(name)})`, type.entryTypes[i]!, depth + 1);
        return `${key} || coalesce(${value}, 'null')`;
      });
      return `(CASE WHEN ${v} IS NULL THEN NULL ELSE '{' || ${fields.join(` || ',' || `)} || '}' END)`;
    }
    case DuckDBTypeId.UNION: {
      const tag = customUnionTag(type);
      if (tag === 'uint256' || tag === 'int256' || tag === 'interval_year_to_month') {
        return `('"' || ${textExpr(v, type, depth)} || '"')`;
      }
      const branches = type.memberTags.map(
        (name, i) => `WHEN ${sqlString(name)} THEN ${jsonExpr(`union_extract(${v}, ${sqlString(name)})`, type.memberTypes[i]!, depth + 1)}`,
      );
      return `(CASE union_tag(${v}) ${branches.join(' ')} END)`;
    }
    default:
      // varchar, enum, json (a JSON string holding its text), bit, unknown types
      return `to_json(${v}::VARCHAR)::VARCHAR`;
  }
}
