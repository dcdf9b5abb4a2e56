import { describe, expect, test } from 'vitest';
import { EngineError } from '../../../src/service/engine/index.ts';
import { parseFilters, parseSortBy, renderFilter, type ColumnRefs } from '../../../src/service/engine/pages/resultFilters.ts';

const refs: ColumnRefs = {
  compare: (name) => (['id', 'name', 'odd "col"', 'ts'].includes(name) ? { sql: `<${name}>`, textual: name === 'name' } : undefined),
  likeText: (name) => `<text ${name}>`,
};

function render(text: string): string {
  return renderFilter(parseFilters(text), refs);
}

function rejection(f: () => unknown): EngineError {
  try {
    f();
  } catch (err) {
    if (err instanceof EngineError) return err;
    throw err;
  }
  throw new Error('expected a bad_request');
}

describe('filters grammar', () => {
  test.each([
    ['id = 1', '(<id> = 1)'],
    ['id != 1', '(<id> != 1)'],
    ['id <> 1', '(<id> != 1)'],
    ['id < -1.5', '(<id> < -1.5)'],
    ['id <= 2e3', '(<id> <= 2e3)'],
    ['id > 0', '(<id> > 0)'],
    ['id >= 0', '(<id> >= 0)'],
    ["name = 'it''s'", "(<name> = 'it''s')"],
    ['name = 5', "(<name> = '5')"],
    ["ts >= '2026-01-01 00:00:00'", "(<ts> >= '2026-01-01 00:00:00')"],
    ["id IN (1, 2, '3')", "(<id> IN (1, 2, '3'))"],
    ["name like 'a%'", "(<text name> LIKE 'a%')"],
    ['name IS NULL', '(<name> IS NULL)'],
    ['name is not null', '(<name> IS NOT NULL)'],
    ['"odd ""col""" = 1', '(<odd "col"> = 1)'],
    ['id = 1 AND name = 2 OR id = 3', "(((<id> = 1) AND (<name> = '2')) OR (<id> = 3))"],
    ['id = 1 OR name = 2 AND id = 3', "((<id> = 1) OR ((<name> = '2') AND (<id> = 3)))"],
    ['(id = 1 OR id = 2) AND name IS NULL', '(((<id> = 1) OR (<id> = 2)) AND (<name> IS NULL))'],
  ])('%s', (input, sql) => {
    expect(render(input)).toBe(sql);
  });

  test.each([
    ['id = 1; DROP TABLE x', 'unexpected ";" at 6'],
    ["name = 'x' OR 1=1 --", 'unexpected "-" at 18'],
    ['NOT id = 1', 'unexpected "NOT"'],
    ['id = lower(name)', 'expected a quoted string or a number'],
    ['upper(name) = 1', 'unexpected "("'],
    ["name = 'unterminated", 'unterminated string'],
    ['id = 1 AND', 'unexpected end of input'],
    ['(id = 1', 'expected ")"'],
    ['id = 1)', 'expected end of input'],
    ['id', 'expected an operator'],
    ['id IN ()', 'expected a quoted string or a number'],
    ['id = 1 id = 2', 'expected end of input'],
    ['id == 1', 'expected a quoted string or a number'],
    ['id = 1e', 'unexpected "e"'],
    ["id = 'a' || 'b'", 'unexpected "|"'],
    ['id = NULL', 'expected a quoted string or a number'],
    ['', 'empty filter'],
    ['id = 0x10', 'unexpected "x"'],
  ])('rejects %j', (input, reason) => {
    const err = rejection(() => render(input));
    expect(err.kind).toBe('bad_request');
    expect(err.message.startsWith('filters: ')).toBe(true);
    expect(err.message).toContain(reason);
    expect(err.position).toBeTypeOf('number');
  });

  test('positions point at the offending character', () => {
    expect(rejection(() => render("name = 'a' AND (id = 1 ) )")).message).toBe(
      'filters: unexpected ")", expected end of input, at 25',
    );
  });

  test('unknown columns are rejected, also when quoted', () => {
    expect(rejection(() => render('"nope" = 1')).message).toBe('filters: unknown column "nope"');
    expect(rejection(() => render('"id; DROP" = 1')).message).toContain('unknown column');
  });

  test('hostile string values stay literals', () => {
    expect(render("name = '''; DROP TABLE t; --'")).toBe("(<name> = '''; DROP TABLE t; --')");
    expect(render("name LIKE '%'' OR ''1''=''1'")).toBe("(<text name> LIKE '%'' OR ''1''=''1')");
  });
});

describe('sort_by grammar', () => {
  test('columns with directions', () => {
    expect(parseSortBy('id desc, name, "odd ""col""" ASC')).toEqual([
      { column: 'id', descending: true },
      { column: 'name', descending: false },
      { column: 'odd "col"', descending: false },
    ]);
  });

  test.each([
    ['id desc desc', 'expected ",", ASC, DESC or end of input'],
    ['id, ', 'expected a column name'],
    ['random()', 'unexpected "("'],
    ['id; drop', 'unexpected ";"'],
    ['', 'empty sort'],
  ])('rejects %j', (input, reason) => {
    const err = rejection(() => parseSortBy(input));
    expect(err.kind).toBe('bad_request');
    expect(err.message.startsWith('sort_by: ')).toBe(true);
    expect(err.message).toContain(reason);
  });
});
