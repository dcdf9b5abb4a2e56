import { describe, expect, it } from 'vitest';
import { escapeHivePathName, HIVE_DEFAULT_PARTITION, hiveSegment, partFileName } from '../../src/export/index.ts';

describe('hive paths', () => {
  it('escapes the characters Hive escapes, as %XX uppercase', () => {
    expect(escapeHivePathName('a/b=c:d%e#f?g*h"i\'j\\k{l[m]n^o\u0001p\u007f')).toBe(
      'a%2Fb%3Dc%3Ad%25e%23f%3Fg%2Ah%22i%27j%5Ck%7Bl%5Bm%5Dn%5Eo%01p%7F',
    );
    expect(escapeHivePathName('2024-01-01 plain ünï')).toBe('2024-01-01 plain ünï');
  });

  it('uses the default partition for NULL and the empty string', () => {
    expect(hiveSegment('day', null)).toBe(`day=${HIVE_DEFAULT_PARTITION}`);
    expect(hiveSegment('day', '')).toBe(`day=${HIVE_DEFAULT_PARTITION}`);
    expect(hiveSegment('a=b', 'x')).toBe('a%3Db=x');
  });

  it('builds deterministic part names from the execution id', () => {
    expect(partFileName('01HX/abc', 7, 'parquet', 'day=1')).toBe('day=1/part-00007-01HX_abc.parquet');
    expect(partFileName('e', 123456, 'csv')).toBe('part-123456-e.csv');
  });
});
