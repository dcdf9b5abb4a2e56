import { describe, expect, test } from 'vitest';
import { splitStatements } from '../../../src/service/engine/sandbox/splitStatements.ts';
import { lineColumnAt, utf16IndexOf } from '../../../src/service/engine/sandbox/sqlPosition.ts';

describe('splitStatements', () => {
  test('splits on semicolons outside strings, quoted names, comments and dollar quotes', () => {
    const sql = `SELECT ';' AS "a;b"; /* ; */ SELECT $x$ ; $x$ -- ;\n; SELECT 3;  -- trailing`;
    const parts = splitStatements(sql);
    expect(parts.map((p) => p.text.trim())).toEqual([`SELECT ';' AS "a;b"`, '/* ; */ SELECT $x$ ; $x$ -- ;', 'SELECT 3']);
    for (const p of parts) expect(sql.slice(p.start, p.start + p.text.length)).toBe(p.text);
  });

  test('whitespace and comments alone are no statement', () => {
    expect(splitStatements(' ; -- x\n /* y */ ;')).toEqual([]);
  });
});

describe('positions', () => {
  test('bytes and code points map to the same UTF-16 index', () => {
    const text = "'é😀' x";
    expect(utf16IndexOf(text, 9, 'byte')).toBe(text.indexOf('x'));
    expect(utf16IndexOf(text, 5, 'codepoint')).toBe(text.indexOf('x'));
  });

  test('lines end at LF, CRLF and lone CR; columns count code points', () => {
    const text = 'a\r\nb\rc\n😀x';
    expect(lineColumnAt(text, text.indexOf('b'))).toEqual({ line: 2, column: 1 });
    expect(lineColumnAt(text, text.indexOf('c'))).toEqual({ line: 3, column: 1 });
    expect(lineColumnAt(text, text.indexOf('x'))).toEqual({ line: 4, column: 2 });
  });
});
