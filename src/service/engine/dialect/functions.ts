// DuneSQL functions over DuckDB: each Trino or Dune function either has a DuckDB function of
// the same contract (then it is renamed, or kept when the name is the same), or becomes a
// macro below (CREATE MACRO, in the main database like the custom types), or a native
// function (nativeFunctions.ts) where SQL cannot compute it (keccak, 256-bit integers).
// A macro takes the Trino name when DuckDB has no function of that name; where DuckDB has one
// with another contract (date_add, cardinality, repeat, regexp_replace), the macro is named
// `trino_<name>` and calls are renamed to it, so DuckDB SQL keeps DuckDB's function.

import { INT256_MAX, INT256_MIN, UINT256_MAX } from '../customTypes.ts';

/** Trino/Dune function name -> the DuckDB function or macro a call is renamed to. */
export const FUNCTION_NAMES: ReadonlyMap<string, string> = new Map([
  // aggregates
  ['approx_distinct', 'approx_count_distinct'],
  ['approx_percentile', 'approx_quantile'],
  ['every', 'bool_and'],
  ['count_if', 'trino_count_if'],
  ['sum', 'trino_sum'],
  ['histogram', 'trino_histogram'],
  ['bitwise_and_agg', 'trino_bitwise_and_agg'],
  ['bitwise_or_agg', 'trino_bitwise_or_agg'],
  ['bitwise_xor_agg', 'trino_bitwise_xor_agg'],
  // date and time
  ['date_add', 'trino_date_add'],
  ['date_trunc', 'trino_date_trunc'],
  ['date_diff', 'date_sub'],
  ['from_unixtime', 'trino_from_unixtime'],
  ['to_unixtime', 'epoch'],
  ['date_format', 'strftime'],
  ['format_datetime', 'strftime'],
  ['date_parse', 'strptime'],
  ['parse_datetime', 'strptime'],
  ['day_of_week', 'isodow'],
  ['dow', 'isodow'],
  ['day_of_month', 'day'],
  ['day_of_year', 'dayofyear'],
  ['doy', 'dayofyear'],
  ['week_of_year', 'week'],
  ['year_of_week', 'isoyear'],
  ['yow', 'isoyear'],
  ['last_day_of_month', 'last_day'],
  ['millisecond', 'trino_millisecond'],
  ['date', 'trino_date'],
  // strings
  ['codepoint', 'unicode'],
  ['chr', 'trino_chr'],
  ['levenshtein_distance', 'levenshtein'],
  ['hamming_distance', 'hamming'],
  ['to_utf8', 'encode'],
  ['from_utf8', 'decode'],
  ['format', 'printf'],
  ['split', 'string_split'],
  ['replace', 'trino_replace'],
  // regular expressions
  ['regexp_like', 'regexp_matches'],
  ['regexp_extract', 'trino_regexp_extract'],
  ['regexp_replace', 'trino_regexp_replace'],
  ['regexp_split', 'regexp_split_to_array'],
  // JSON
  ['json_parse', 'json'],
  ['json_array_length', 'trino_json_array_length'],
  // arrays and maps
  ['cardinality', 'trino_cardinality'],
  ['array_join', 'array_to_string'],
  ['array_max', 'list_max'],
  ['array_min', 'list_min'],
  ['array_sort', 'list_sort'],
  ['array_position', 'trino_array_position'],
  ['arrays_overlap', 'list_has_any'],
  ['array_intersect', 'list_intersect'],
  ['element_at', 'trino_element_at'],
  ['sequence', 'generate_series'],
  ['slice', 'trino_slice'],
  ['transform', 'list_transform'],
  ['filter', 'list_filter'],
  ['repeat', 'trino_repeat'],
  ['zip', 'list_zip'],
  // math
  ['truncate', 'trunc'],
  ['sign', 'trino_sign'],
  ['rand', 'random'],
  ['is_nan', 'isnan'],
  ['is_finite', 'isfinite'],
  ['is_infinite', 'isinf'],
  ['bit_count', 'trino_bit_count'],
  // conditional
  ['if', 'trino_if'],
  // varbinary (Dune)
  ['from_hex', 'trino_from_hex'],
  ['to_hex', 'hex'],
  ['sha256', 'trino_sha256'],
  ['md5', 'trino_md5'],
  ['bytearray_substring', 'varbinary_substring'],
  ['bytearray_length', 'varbinary_length'],
  ['bytearray_ltrim', 'varbinary_ltrim'],
  ['bytearray_rtrim', 'varbinary_rtrim'],
  ['bytearray_concat', 'varbinary_concat'],
  ['bytearray_starts_with', 'varbinary_starts_with'],
  ['bytearray_position', 'varbinary_position'],
  ['bytearray_reverse', 'varbinary_reverse'],
  ['bytearray_to_uint256', 'varbinary_to_uint256'],
  ['bytearray_to_int256', 'varbinary_to_int256'],
  ['bytearray_to_bigint', 'varbinary_to_bigint'],
  ['bytearray_to_integer', 'varbinary_to_integer'],
]);

/**
 * Calls rewritten whole: `{n}` is the n-th argument (translated). Lambdas are arguments here,
 * and a DuckDB macro cannot take a lambda.
 */
export const FUNCTION_TEMPLATES: ReadonlyMap<string, { arity: number; sql: string }> = new Map([
  ['any_match', { arity: 2, sql: 'coalesce(list_bool_or(list_transform({0}, {1})), false)' }],
  ['all_match', { arity: 2, sql: 'coalesce(list_bool_and(list_transform({0}, {1})), true)' }],
  ['none_match', { arity: 2, sql: '(NOT coalesce(list_bool_or(list_transform({0}, {1})), false))' }],
  ['reduce', { arity: 4, sql: 'list_transform([list_reduce({0}, {2}, {1})], {3})[1]' }],
  // Lambdas of a map's key and value, or of two zipped arrays' elements (lambdas.ts)
  ['map_filter', { arity: 2, sql: 'map_from_entries(list_filter(map_entries({0}), __e -> {1@__e.key,__e.value}))' }],
  ['transform_values', { arity: 2, sql: "map_from_entries(list_transform(map_entries({0}), __e -> {'key': __e.key, 'value': {1@__e.key,__e.value}}))" }],
  ['transform_keys', { arity: 2, sql: "map_from_entries(list_transform(map_entries({0}), __e -> {'key': {1@__e.key,__e.value}, 'value': __e.value}))" }],
  ['zip_with', { arity: 3, sql: 'list_transform(list_zip({0}, {1}), __e -> {2@__e[1],__e[2]})' }],
]);

const UNITS = `CASE lower(unit)
    WHEN 'millisecond' THEN to_milliseconds(n) WHEN 'second' THEN to_seconds(n) WHEN 'minute' THEN to_minutes(n)
    WHEN 'hour' THEN to_hours(n) WHEN 'day' THEN to_days(n) WHEN 'week' THEN to_weeks(n)
    WHEN 'month' THEN to_months(n) WHEN 'quarter' THEN to_months(3 * n) WHEN 'year' THEN to_years(n)
    ELSE error('date_add: unknown unit ' || unit) END`;

/** The macros, as `name(params) AS body` (one definition or several overloads, comma-separated). */
const MACROS: readonly string[] = [
  // date and time
  `trino_date_add(unit, n, d) AS cast_to_type(d + ${UNITS}, d)`,
  // Trino's date_trunc of a date is a date (DuckDB's a timestamp)
  `trino_date_trunc(unit, d) AS cast_to_type(date_trunc(unit, d), d)`,
  `trino_from_unixtime(s) AS to_timestamp(s), (s, zone) AS timezone(zone, to_timestamp(s))`,
  `trino_millisecond(t) AS millisecond(t) % 1000`,
  `trino_date(v) AS CAST(v AS DATE)`,
  `from_iso8601_timestamp(s) AS CAST(s AS TIMESTAMPTZ)`,
  `from_iso8601_date(s) AS CAST(s AS DATE)`,
  `to_iso8601(t) AS strftime(t, '%Y-%m-%dT%H:%M:%S.%gZ')`,
  `at_timezone(t, zone) AS timezone(zone, t)`,
  `current_timezone() AS 'UTC'`,
  `with_timezone(t, zone) AS timezone(zone, t::TIMESTAMP)`,
  // strings
  `trino_replace(s, search) AS replace(s, search, ''), (s, search, repl) AS replace(s, search, repl)`,
  // regular expressions: Trino returns NULL where DuckDB returns ''; replaces every match;
  // refers to groups as $1 where DuckDB writes \\1
  `trino_regexp_extract(s, p) AS CASE WHEN regexp_matches(s, p) THEN regexp_extract(s, p) END,
   (s, p, g) AS CASE WHEN regexp_matches(s, p) THEN regexp_extract(s, p, g) END`,
  `trino_regexp_replace(s, p) AS regexp_replace(s, p, '', 'g'),
   (s, p, r) AS regexp_replace(s, p, regexp_replace(r, '\\$(\\d)', '\\\\\\1', 'g'), 'g')`,
  `regexp_count(s, p) AS len(regexp_extract_all(s, p))`,
  `regexp_position(s, p) AS CAST(CASE WHEN regexp_matches(s, p) THEN strpos(s, regexp_extract(s, p)) ELSE -1 END AS INTEGER)`,
  // JSON
  `json_extract_scalar(j, path) AS CASE WHEN json_type(j::JSON, path) IN ('OBJECT', 'ARRAY') THEN NULL ELSE json_extract_string(j::JSON, path) END`,
  `json_format(j) AS CAST(j AS VARCHAR)`,
  `trino_json_array_length(j) AS CAST(json_array_length(j::JSON) AS BIGINT)`,
  `json_array_get(j, i) AS json_extract(j::JSON, '$[' || i || ']')`,
  `json_array_contains(j, v) AS list_contains(CAST(j::JSON AS VARCHAR[]), CAST(v AS VARCHAR))`,
  `json_size(j, path) AS CASE json_type(j::JSON, path) WHEN 'ARRAY' THEN json_array_length(j::JSON, path)
     WHEN 'OBJECT' THEN len(json_keys(j::JSON, path)) ELSE 0 END::BIGINT`,
  `is_json_scalar(j) AS json_type(j::JSON) NOT IN ('OBJECT', 'ARRAY')`,
  // arrays and maps
  `trino_cardinality(c) AS CASE json_type(to_json(c)) WHEN 'ARRAY' THEN json_array_length(to_json(c)) ELSE len(json_keys(to_json(c))) END::BIGINT`,
  `trino_array_position(a, x) AS CAST(coalesce(list_position(a, x), 0) AS BIGINT)`,
  `trino_element_at(c, k) AS c[k]`,
  `trino_slice(a, start, n) AS list_slice(a, start, start + n - 1)`,
  `trino_repeat(x, n) AS list_transform(range(n), i -> x)`,
  // Trino's chr takes a bigint (what integer arithmetic gives); DuckDB's only an INTEGER.
  `trino_chr(n) AS chr(CAST(n AS INTEGER))`,
  `array_remove(a, x) AS list_filter(a, e -> e IS DISTINCT FROM x)`,
  `array_except(a, b) AS list_filter(a, (e, i) -> NOT list_contains(b, e) AND list_position(a, e) = i)`,
  `array_union(a, b) AS list_distinct(list_concat(a, b))`,
  `array_has_duplicates(a) AS len(a) <> len(list_distinct(a))`,
  `map_agg(k, v) AS map(list(k), list(v))`,
  // Trino's sum of integers is a bigint (overflow an error), of decimals decimal(38, s), of
  // doubles and reals their type; DuckDB's of integers a 128-bit integer. `x * 0::BIGINT *
  // 0::BIGINT` has exactly Trino's result type for each (a decimal widens to 38 digits).
  `trino_sum(x) AS cast_to_type(sum(x), any_value(x) * 0::BIGINT * 0::BIGINT)`,
  `trino_count_if(c) AS CAST(count_if(c) AS BIGINT)`,
  `trino_bitwise_and_agg(x) AS CAST(bit_and(x) AS BIGINT)`,
  `trino_bitwise_or_agg(x) AS CAST(bit_or(x) AS BIGINT)`,
  `trino_bitwise_xor_agg(x) AS CAST(bit_xor(x) AS BIGINT)`,
  `trino_histogram(x) AS map_from_entries(list_transform(map_entries(histogram(x)), e -> {'k': e.key, 'v': CAST(e.value AS BIGINT)}))`,
  // math and bitwise (Trino's bitwise functions work on bigint)
  `trino_bit_count(x, bits) AS CAST(bit_count(CAST(x AS BIGINT) & CASE WHEN bits >= 64 THEN -1 ELSE (1::BIGINT << bits) - 1 END) AS BIGINT)`,
  `bitwise_and(a, b) AS CAST(a AS BIGINT) & CAST(b AS BIGINT)`,
  `bitwise_or(a, b) AS CAST(a AS BIGINT) | CAST(b AS BIGINT)`,
  `bitwise_xor(a, b) AS xor(CAST(a AS BIGINT), CAST(b AS BIGINT))`,
  `bitwise_not(a) AS ~CAST(a AS BIGINT)`,
  `bitwise_left_shift(a, n) AS CAST(a AS BIGINT) << n`,
  `bitwise_right_shift(a, n) AS CAST(a AS BIGINT) >> n`,
  `bitwise_right_shift_arithmetic(a, n) AS CAST(a AS BIGINT) >> n`,
  `trino_sign(x) AS cast_to_type(sign(x), x)`,
  `infinity() AS 'infinity'::DOUBLE`,
  `nan() AS 'nan'::DOUBLE`,
  `e() AS exp(1)`,
  `to_base(x, radix) AS CASE radix WHEN 2 THEN bin(x) WHEN 16 THEN lower(hex(x)) ELSE error('to_base: radix 2 or 16 only') END`,
  `from_base(s, radix) AS CASE radix WHEN 16 THEN CAST('0x' || s AS BIGINT) WHEN 2 THEN CAST('0b' || s AS BIGINT) WHEN 10 THEN CAST(s AS BIGINT) ELSE error('from_base: radix 2, 10 or 16 only') END`,
  // casts to the 256-bit types that answer NULL instead of failing
  `try_uint256(v) AS CASE WHEN TRY_CAST(TRY_CAST(v AS BIGNUM) AS VARCHAR)::BIGNUM BETWEEN 0::BIGNUM AND '${UINT256_MAX}'::BIGNUM THEN uint256(v) END`,
  `try_int256(v) AS CASE WHEN TRY_CAST(TRY_CAST(v AS BIGNUM) AS VARCHAR)::BIGNUM BETWEEN '${INT256_MIN}'::BIGNUM AND '${INT256_MAX}'::BIGNUM THEN int256(v) END`,
  // conditional
  `trino_if(c, a) AS CASE WHEN c THEN a END, (c, a, b) AS CASE WHEN c THEN a ELSE b END`,
  // varbinary (Dune): from_hex with or without 0x
  `trino_from_hex(s) AS unhex(regexp_replace(s, '^0[xX]', ''))`,
  `trino_sha256(b) AS unhex(sha256(b))`,
  `trino_md5(b) AS unhex(md5(b))`,
  `varbinary_substring(b, start, n) AS unhex(substring(hex(b), 2 * start - 1, 2 * n))`,
  `varbinary_length(b) AS octet_length(b)`,
  `varbinary_ltrim(b) AS unhex(regexp_replace(hex(b), '^(00)+', ''))`,
  `varbinary_rtrim(b) AS unhex(regexp_replace(hex(b), '(00)+$', ''))`,
  `varbinary_concat(a, b) AS a || b`,
  `varbinary_starts_with(b, prefix) AS starts_with(hex(b), hex(prefix))`,
  `varbinary_position(b, part) AS (strpos(hex(b), hex(part)) + 1) // 2`,
  `varbinary_reverse(b) AS unhex(array_to_string(list_reverse(regexp_extract_all(hex(b), '..')), ''))`,
  `varbinary_to_integer(b) AS CAST(CAST('0x' || hex(b) AS UBIGINT) AS INTEGER)`,
  `varbinary_to_bigint(b) AS CAST(CAST('0x' || hex(b) AS UBIGINT) AS BIGINT)`,
];

/** Every macro name defined here (for the sandbox's list of functions). */
export const MACRO_NAMES: readonly string[] = MACROS.map((m) => /^\s*([a-z_0-9]+)/.exec(m)![1]!);

export function dialectMacroStatements(): string[] {
  return MACROS.map((m) => `CREATE OR REPLACE MACRO ${m}`);
}
