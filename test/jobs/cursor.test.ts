import { describe, expect, it } from 'vitest';
import { canonicalCursor, compareCursor, cursorKind, cursorValueProblem, lookbackProblem, lookbackStart, sqlLiteral } from '../../src/jobs/incremental/cursor.ts';

describe('cursor values', () => {
  it('knows which column types can be ordered', () => {
    expect(['bigint', 'integer', 'int256', 'decimal(18, 4)', 'double', 'date', 'timestamp(6)', 'timestamp(3) with time zone', 'varchar'].map(cursorKind)).toEqual([
      'integer',
      'integer',
      'integer',
      'decimal',
      'float',
      'date',
      'timestamp',
      'timestamp',
      'text',
    ]);
    expect(['boolean', 'varbinary', 'array(bigint)', 'interval day to second', 'json', 'uuid', 'map(varchar, bigint)'].map(cursorKind)).toEqual(Array(7).fill(undefined));
  });

  it('orders values as the engine does, beyond doubles and across spellings', () => {
    expect(compareCursor('integer', '9007199254740993', '9007199254740992')).toBeGreaterThan(0);
    expect(compareCursor('integer', '-5', '3')).toBeLessThan(0);
    expect(compareCursor('decimal', '10.5', '9.75')).toBeGreaterThan(0);
    expect(compareCursor('decimal', '-0.5', '-0.25')).toBeLessThan(0);
    expect(compareCursor('decimal', '1.50', '1.5')).toBe(0);
    expect(compareCursor('timestamp', '2026-01-01', '2026-01-01 00:00:00.000000')).toBe(0);
    expect(compareCursor('timestamp', '2026-01-01T00:00:00.000001Z', '2026-01-01 00:00:00Z')).toBeGreaterThan(0);
    expect(compareCursor('date', '2026-02-01', '2026-01-31')).toBeGreaterThan(0);
    // UTF-8 byte order: U+FF5E sorts before U+1F600 (in UTF-16 code units it would sort after).
    expect(compareCursor('text', '\uff5e', '\u{1f600}')).toBeLessThan(0);
  });

  it('checks initial values and lookbacks against the kind', () => {
    expect(cursorValueProblem('integer', '12')).toBeUndefined();
    expect(cursorValueProblem('integer', '1.5')).toBe('expected a whole number');
    expect(cursorValueProblem('timestamp', '2026-02-30')).toMatch(/expected a timestamp/);
    expect(cursorValueProblem('timestamp', '2026-01-01T10:00:00Z')).toBeUndefined();
    expect(cursorValueProblem('date', '2026-1-1')).toMatch(/expected a date/);
    expect(cursorValueProblem('text', 5)).toMatch(/expected text/);
    expect(lookbackProblem('timestamp', 3)).toMatch(/duration/);
    expect(lookbackProblem('integer', '1h')).toMatch(/by a number/);
    expect(lookbackProblem('text', 1)).toMatch(/cannot look back/);
  });

  it('moves back by the lookback, keeping the fraction and the zone', () => {
    expect(lookbackStart('timestamp', '2026-01-01 00:30:00.123456Z', '1h')).toBe('2025-12-31 23:30:00.123456Z');
    expect(lookbackStart('date', '2026-03-01', '2d')).toBe('2026-02-27');
    expect(lookbackStart('integer', '100', 10)).toBe('90');
    expect(lookbackStart('integer', '100', undefined)).toBe('100');
  });

  it('spells values for SQL: numbers bare (negative in parentheses), the rest quoted', () => {
    expect(sqlLiteral('integer', '-3')).toBe('(-3)');
    expect(sqlLiteral(undefined, 7)).toBe('7');
    expect(sqlLiteral('text', "it's")).toBe("'it''s'");
    expect(sqlLiteral('timestamp', canonicalCursor('timestamp', '2026-01-01T00:00:00.5'))).toBe("'2026-01-01 00:00:00.5'");
  });
});
