// column_types name every inner type as the top level does: a client builds its schema from them,
// so json inside a list, a map or a row must say json (its values are JSON strings holding the
// text, as at the top level), never varchar. The reference is DuckDB itself: the types it reports
// for the same SQL run directly on the engine's instance, through the same mapping.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { tableFromIPC, type Field } from 'apache-arrow';
import { protocolTypeName } from '../../../src/service/engine/typeNames.ts';
import { arrowSchema, TYPE_METADATA_KEY } from '../../../src/types/arrow.ts';
import { DuckDbEngine } from '../../../src/service/engine/engine.ts';
import { opts, parseExact, startEngine, type EngineFixture } from './engineFixture.ts';

let fx: EngineFixture;
beforeAll(async () => {
  fx = await startEngine({ sampleRows: 10 });
});
afterAll(async () => {
  await fx.close();
});

/** The types DuckDB reports for `sql` run directly on the engine's instance, mapped as the engine maps them. */
async function directTypes(sql: string): Promise<string[]> {
  const engine = fx.engine as DuckDbEngine;
  return engine.withConnection(async (conn) => {
    const prepared = await conn.prepare(sql);
    return Array.from({ length: prepared.columnCount }, (_, i) => protocolTypeName(prepared.columnType(i)));
  });
}

/** Every field of an Arrow schema, nested ones included, as path -> its `service.type`. */
function fieldTypes(fields: readonly Field[], prefix = ''): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const f of fields) {
    const path = `${prefix}${f.name}`;
    out[path] = f.metadata.get(TYPE_METADATA_KEY);
    Object.assign(out, fieldTypes(f.type.children ?? [], `${path}.`));
  }
  return out;
}

async function checkTypes(sql: string): Promise<string[]> {
  const o = opts();
  const info = await fx.engine.execute(sql, o);
  const expected = await directTypes(sql);
  expect(info.columnTypes).toEqual(expected);
  const page = await fx.engine.page(o.resultId, { offset: 0, limit: 10 });
  expect(page.columnTypes).toEqual(expected);
  // The Arrow page's schema is the one a client builds from column_types, at every depth.
  // Past the last row: the schema alone (some of DuckDB's extreme values are JSON-only, 406 in Arrow).
  const arrow = await fx.engine.arrowPage(o.resultId, { offset: info.rowCount, limit: 10 });
  const served = tableFromIPC(arrow.arrow).schema;
  const client = arrowSchema(info.columnNames.map((name, i) => ({ name, type: expected[i]! })));
  expect(String(served.fields.map((f) => f.type))).toBe(String(client.fields.map((f) => f.type)));
  expect(fieldTypes(served.fields)).toEqual(fieldTypes(client.fields));
  return expected;
}

const NESTED = `SELECT
  ['{"a": 1}'::JSON, NULL] AS json_list,
  MAP {'k': '[1, 2]'::JSON} AS json_map,
  {'j': '{"b": true}'::JSON, 'u': '0f8fad5b-d9cb-469f-a165-70867728950e'::UUID, 'b': '\\xDE\\xAD'::BLOB, 'e': 'sad'::ENUM('sad', 'ok'), 'i': INTERVAL 90 MINUTE} AS a_row,
  [{'j': '1'::JSON, 'u': '0f8fad5b-d9cb-469f-a165-70867728950e'::UUID}] AS rows_list,
  [INTERVAL 1 DAY, INTERVAL 2 MONTH] AS interval_list,
  MAP {'x': ['"t"'::JSON]} AS map_of_json_lists,
  ['{}'::JSON, '[]'::JSON]::JSON[2] AS json_array,
  [['\\x01'::BLOB]] AS blob_lists,
  ['ok'::ENUM('sad', 'ok')] AS enum_list`;

describe('column_types at every depth', () => {
  test('json, uuid, varbinary, enum and intervals inside lists, maps, rows and lists of rows', async () => {
    const types = await checkTypes(NESTED);
    expect(types).toEqual([
      'array(json)',
      'map(varchar, json)',
      'row(j json, u uuid, b varbinary, e varchar, i interval day to second)',
      'array(row(j json, u uuid))',
      'array(interval day to second)',
      'map(varchar, array(json))',
      'array(json)',
      'array(array(varbinary))',
      'array(varchar)',
    ]);
  });

  test('inner json values are JSON strings holding their text, as at the top level', async () => {
    const o = opts();
    await fx.engine.execute(`SELECT ['{"a": 1}'::JSON] AS l, {'j': '[1]'::JSON} AS r, '{"a": 1}'::JSON AS top`, o);
    const page = await fx.engine.page(o.resultId, { offset: 0, limit: 10 });
    expect(parseExact(page.rowsJson)).toEqual([{ l: ['{"a": 1}'], r: { j: '[1]' }, top: '{"a": 1}' }]);
  });

  test("every column of DuckDB's test_all_types()", async () => {
    const types = await checkTypes('SELECT * FROM test_all_types()');
    expect(types.length).toBeGreaterThan(40);
  });
});
