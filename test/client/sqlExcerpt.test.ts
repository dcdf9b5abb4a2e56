import { describe, expect, it } from 'vitest';
import { sqlExcerpt } from '../../src/client/index.ts';

describe('sqlExcerpt', () => {
  it('puts a caret under the column of the offending line', () => {
    expect(sqlExcerpt('SELECT 1\nSELECT * FORM t', 2, 10)).toBe('2 | SELECT * FORM t\n  |          ^');
  });

  it('counts columns in code points and keeps tabs aligned', () => {
    expect(sqlExcerpt("SELECT '😀', \tfoo(", 1, 15)).toBe("1 | SELECT '😀', \tfoo(\n  |             \t ^");
  });

  it('gives nothing for a position outside the text', () => {
    expect(sqlExcerpt('SELECT 1', 3, 1)).toBeUndefined();
    expect(sqlExcerpt('SELECT 1', 1, 40)).toBeUndefined();
    expect(sqlExcerpt('SELECT 1', undefined, 1)).toBeUndefined();
  });
});
