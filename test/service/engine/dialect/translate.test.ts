// The DuneSQL -> DuckDB SQL rewriter on its own: what it changes, what it must leave alone
// (strings, comments, quoted names, DuckDB's own syntax), and the map back to the user's text.
import { describe, expect, test } from 'vitest';
import { translateDuneSql } from '../../../../src/service/engine/dialect/translate.ts';

const sql = (text: string): string => translateDuneSql(text).sql;

describe('translateDuneSql', () => {
  test.each([
    ['0x literals, odd length padded', 'SELECT 0xAB, 0xabc, 0x', "SELECT from_hex('ab'), from_hex('0abc'), from_hex('')"],
    ["X'..' literals", "SELECT X'0102'", "SELECT from_hex('0102')"],
    ['VALUES without parentheses', 'VALUES 1, 2, 3', 'VALUES (1), (2), (3)'],
    ['VALUES in a subquery, then more', 'SELECT * FROM (VALUES 1, 2) AS t(x) ORDER BY x', 'SELECT * FROM (VALUES (1), (2)) AS t(x) ORDER BY x'],
    ['VALUES rows already in parentheses', "VALUES (1, 'a'), (2, 'b')", "VALUES (1, 'a'), (2, 'b')"],
    ['INSERT ... VALUES', 'INSERT INTO t VALUES 1, 2', 'INSERT INTO t VALUES (1), (2)'],
    ['timestamp literal with a zone', "SELECT TIMESTAMP '2024-01-01 00:00:00 UTC'", "SELECT TIMESTAMPTZ '2024-01-01 00:00:00 UTC'"],
    ['timestamp literal without a zone stays', "SELECT TIMESTAMP '2024-01-01 00:00:00'", "SELECT TIMESTAMP '2024-01-01 00:00:00'"],
    ['Trino types in casts', 'SELECT CAST(x AS varbinary), TRY_CAST(y AS array(map(varchar, double)))', 'SELECT CAST(x AS BLOB), TRY_CAST(y AS MAP(VARCHAR, DOUBLE)[])'],
    ['row types', 'SELECT CAST(r AS row(a bigint, "b c" varchar))', 'SELECT CAST(r AS STRUCT(a BIGINT, "b c" VARCHAR))'],
    ['timestamp with time zone in a cast', 'SELECT CAST(t AS timestamp(3) with time zone)', 'SELECT CAST(t AS TIMESTAMPTZ)'],
    ['a cast to uint256 checks the range', "SELECT CAST('5' AS uint256), try_cast(x AS int256)", "SELECT uint256('5'), try_int256(x)"],
    ['renamed functions', 'SELECT approx_distinct(a), date_diff(\'day\', b, c)', "SELECT approx_count_distinct(a), date_sub('day', b, c)"],
    ['a lambda argument rewrites the call', 'SELECT any_match(a, x -> x > 0x01)', "SELECT coalesce(list_bool_or(list_transform(a, x -> x > from_hex('01'))), false)"],
    ['a lambda of a key and a value', "SELECT map_filter(m, (k, v) -> v > 1 AND t.k = 'k')", "SELECT map_from_entries(list_filter(map_entries(m), __e -> (__e.value > 1 AND t.k = 'k')))"],
    ['MySQL date format patterns', "SELECT date_format(t, '%Y-%m-%d %H:%i:%s')", "SELECT strftime(t, '%Y-%m-%d %H:%M:%S')"],
    ['Joda date format patterns', "SELECT format_datetime(t, 'yyyy-MM-dd HH:mm')", "SELECT strftime(t, '%Y-%m-%d %H:%M')"],
    ['a macro aggregate over a window keeps DuckDB\'s own', 'SELECT count_if(x) OVER (), count_if(x)', 'SELECT count_if(x) OVER (), trino_count_if(x)'],
    ["sum is Trino's unless it takes DISTINCT, ORDER BY, OVER or FILTER", 'SELECT sum(a), sum(DISTINCT a), sum(a ORDER BY b), sum(a) OVER (), sum(a) FILTER (WHERE a > 0)', 'SELECT trino_sum(a), sum(DISTINCT a), sum(a ORDER BY b), sum(a) OVER (), sum(a) FILTER (WHERE a > 0)'],
    ['FILTER after an aggregate is a clause, not filter()', 'SELECT count(*) FILTER (WHERE x > 1)', 'SELECT count(*) FILTER (WHERE x > 1)'],
  ])('%s', (_name, input, output) => {
    expect(sql(input)).toBe(output);
  });

  test.each([
    ['strings', "SELECT '0xab', 'VALUES 1, 2', 'approx_distinct(x)'"],
    ['comments', 'SELECT 1 -- 0xab approx_distinct(x)\n/* VALUES 1, 2 */'],
    ['quoted names', 'SELECT "0xab", "approx_distinct" FROM t'],
    ['qualified names', 'SELECT s.approx_distinct(x), t.date_add FROM t'],
    ["an X'..' literal that is not hex (DuckDB then says why)", "SELECT X'ab'';'"],
    ["DuckDB's own syntax", 'SELECT i::BIGINT, [1, 2][1], {\'a\': 1} FROM range(3) t(i)'],
  ])('leaves %s alone', (_name, input) => {
    expect(sql(input)).toBe(input);
  });

  test('every offset of the translation maps into the text the user sent', () => {
    const input = 'SELECT 0xdeadbeef AS a,\n  approx_distinct(b), nope FROM t';
    const t = translateDuneSql(input);
    // Copied text maps one to one; text inside a replacement maps to what it replaced.
    expect(t.sourceOffset(t.sql.indexOf('nope'))).toBe(input.indexOf('nope'));
    expect(t.sourceOffset(t.sql.indexOf('approx_count_distinct') + 3)).toBe(input.indexOf('approx_distinct'));
    expect(t.sourceOffset(t.sql.indexOf("from_hex('deadbeef')") + 5)).toBe(input.indexOf('0xdeadbeef'));
    expect(t.sourceOffset(t.sql.length + 10)).toBe(input.length);
  });
});
