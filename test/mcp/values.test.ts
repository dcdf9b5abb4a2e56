import { describe, expect, it } from 'vitest';
import { Secrets } from '../../src/mcp/secrets.ts';
import { jsonRow, jsonValue } from '../../src/mcp/values.ts';

describe('jsonValue', () => {
  it('renders what JSON cannot hold exactly as text, the rest as JSON', () => {
    expect(jsonValue(2n ** 63n - 1n)).toBe('9223372036854775807');
    expect(jsonValue(-(2n ** 200n))).toBe((-(2n ** 200n)).toString());
    expect(jsonValue(1.5)).toBe(1.5);
    expect([NaN, Infinity, -Infinity].map((v) => jsonValue(v))).toEqual(['NaN', 'Infinity', '-Infinity']);
    expect(jsonValue(new Uint8Array([0, 171, 255]))).toBe('0x00abff');
    expect(jsonValue(new Map<unknown, unknown>([[1n, 'a'], ['k', null]]))).toEqual([{ key: '1', value: 'a' }, { key: 'k', value: null }]);
    expect(jsonValue({ a: [1n, { b: new Date(Date.UTC(2026, 0, 2)) }] })).toEqual({ a: ['1', { b: '2026-01-02T00:00:00.000Z' }] });
    expect(jsonValue(undefined)).toBeNull();
  });

  it('writes timestamps by their column type: Z with a zone, none without, T in the exact text beyond milliseconds', () => {
    const at = new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678));
    const row = { a: at, b: at, c: '2026-01-02 03:04:05.678901', d: '12.50' };
    const columns = [
      { name: 'a', type: 'timestamp(3) with time zone' },
      { name: 'b', type: 'timestamp(3)' },
      { name: 'c', type: 'timestamp(6)' },
      { name: 'd', type: 'decimal(10, 2)' },
    ];
    expect(jsonRow(row, columns)).toEqual({ a: '2026-01-02T03:04:05.678Z', b: '2026-01-02T03:04:05.678', c: '2026-01-02T03:04:05.678901', d: '12.50' });
  });
});

describe('Secrets', () => {
  it('scrubs the API key and secret-named environment values from text and values', () => {
    const secrets = new Secrets(['sk_live_abcdef123', undefined], { AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG', HOME: '/home/someone', SHORT_TOKEN: 'abc' });
    expect(secrets.scrub('key sk_live_abcdef123 and wJalrXUtnFEMI/K7MDENG in /home/someone abc')).toBe('key *** and *** in /home/someone abc');
    expect(secrets.scrubValue({ m: ['x sk_live_abcdef123'] })).toEqual({ m: ['x ***'] });
  });
});

describe('jsonRow clipping', () => {
  it('cuts text values past MAX_TEXT_CHARS, marked and counted, nested ones too', async () => {
    const { MAX_TEXT_CHARS } = await import('../../src/mcp/values.ts');
    const long = 'y'.repeat(MAX_TEXT_CHARS + 5);
    const clipped = { count: 0 };
    const row = jsonRow({ s: long, l: [long], b: new Uint8Array(MAX_TEXT_CHARS) }, [{ name: 's', type: 'varchar' }, { name: 'l', type: 'array(varchar)' }, { name: 'b', type: 'varbinary' }], clipped);
    expect(row.s).toBe(`${'y'.repeat(MAX_TEXT_CHARS)}... [clipped: 5 more characters]`);
    expect((row.l as string[])[0]).toBe(row.s);
    expect(String(row.b)).toMatch(/^0x0{1998}\.\.\. \[clipped: 2002 more characters\]$/);
    expect(clipped.count).toBe(3);
  });
});
