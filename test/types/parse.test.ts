import { describe, expect, it } from 'vitest';
import { formatType, parseType, type SqlType } from '../../src/types/index.ts';

describe('parseType', () => {
  const cases: Array<[string, SqlType, string]> = [
    ['boolean', { kind: 'boolean' }, 'boolean'],
    ['tinyint', { kind: 'tinyint' }, 'tinyint'],
    ['smallint', { kind: 'smallint' }, 'smallint'],
    ['integer', { kind: 'integer' }, 'integer'],
    ['int', { kind: 'integer' }, 'integer'],
    ['bigint', { kind: 'bigint' }, 'bigint'],
    ['uint256', { kind: 'uint256' }, 'uint256'],
    ['int256', { kind: 'int256' }, 'int256'],
    ['real', { kind: 'real' }, 'real'],
    ['double', { kind: 'double' }, 'double'],
    ['double precision', { kind: 'double' }, 'double'],
    ['decimal(38, 10)', { kind: 'decimal', precision: 38, scale: 10 }, 'decimal(38, 10)'],
    ['decimal(10)', { kind: 'decimal', precision: 10, scale: 0 }, 'decimal(10, 0)'],
    ['decimal', { kind: 'decimal', precision: 38, scale: 0 }, 'decimal(38, 0)'],
    ['decimal(76, 76)', { kind: 'decimal', precision: 76, scale: 76 }, 'decimal(76, 76)'],
    ['varchar', { kind: 'varchar' }, 'varchar'],
    ['varchar(255)', { kind: 'varchar', length: 255 }, 'varchar(255)'],
    ['char(3)', { kind: 'char', length: 3 }, 'char(3)'],
    ['char', { kind: 'char', length: 1 }, 'char(1)'],
    ['varbinary', { kind: 'varbinary' }, 'varbinary'],
    ['json', { kind: 'json' }, 'json'],
    ['date', { kind: 'date' }, 'date'],
    ['time(6)', { kind: 'time', precision: 6 }, 'time(6)'],
    ['time', { kind: 'time', precision: 3 }, 'time(3)'],
    ['timestamp(6)', { kind: 'timestamp', precision: 6, withTimeZone: false }, 'timestamp(6)'],
    ['timestamp', { kind: 'timestamp', precision: 3, withTimeZone: false }, 'timestamp(3)'],
    ['timestamp(9) with time zone', { kind: 'timestamp', precision: 9, withTimeZone: true }, 'timestamp(9) with time zone'],
    ['timestamp with time zone', { kind: 'timestamp', precision: 3, withTimeZone: true }, 'timestamp(3) with time zone'],
    ['timestamp(0) without time zone', { kind: 'timestamp', precision: 0, withTimeZone: false }, 'timestamp(0)'],
    ['interval day to second', { kind: 'interval_day_to_second' }, 'interval day to second'],
    ['interval year to month', { kind: 'interval_year_to_month' }, 'interval year to month'],
    ['uuid', { kind: 'uuid' }, 'uuid'],
    ['ipaddress', { kind: 'ipaddress' }, 'ipaddress'],
    ['array(bigint)', { kind: 'array', element: { kind: 'bigint' } }, 'array(bigint)'],
    ['map(varchar, double)', { kind: 'map', key: { kind: 'varchar' }, value: { kind: 'double' } }, 'map(varchar, double)'],
    [
      'row(a bigint, b varchar)',
      { kind: 'row', fields: [{ name: 'a', type: { kind: 'bigint' } }, { name: 'b', type: { kind: 'varchar' } }] },
      'row(a bigint, b varchar)',
    ],
  ];

  it.each(cases)('parses %s', (text, expected, canonical) => {
    const parsed = parseType(text);
    expect(parsed).toEqual(expected);
    expect(formatType(parsed)).toBe(canonical);
    // The canonical text parses back to the same type.
    expect(parseType(canonical)).toEqual(expected);
  });

  it('parses deep nesting', () => {
    const t = parseType('array(row(a bigint, b map(varchar, array(double))))');
    expect(t).toEqual({
      kind: 'array',
      element: {
        kind: 'row',
        fields: [
          { name: 'a', type: { kind: 'bigint' } },
          {
            name: 'b',
            type: { kind: 'map', key: { kind: 'varchar' }, value: { kind: 'array', element: { kind: 'double' } } },
          },
        ],
      },
    });
    expect(formatType(t)).toBe('array(row(a bigint, b map(varchar, array(double))))');
  });

  it('tolerates whitespace and case', () => {
    const t = parseType('  ARRAY ( Row ( a  BIGINT ,b   Map(VARCHAR,Array( Double ) ) ) )\n');
    expect(formatType(t)).toBe('array(row(a bigint, b map(varchar, array(double))))');
    expect(parseType('DECIMAL( 38 ,10 )')).toEqual({ kind: 'decimal', precision: 38, scale: 10 });
    expect(parseType('TIMESTAMP(6)   WITH  TIME\tZONE')).toEqual({ kind: 'timestamp', precision: 6, withTimeZone: true });
    expect(parseType('Interval  Day To Second')).toEqual({ kind: 'interval_day_to_second' });
  });

  it('reads quoted field names with spaces, case, commas, parentheses and escaped quotes', () => {
    const t = parseType('row("Order Id" bigint, "a,b(c)" varchar, "say ""hi""" double)');
    expect(t).toEqual({
      kind: 'row',
      fields: [
        { name: 'Order Id', type: { kind: 'bigint' } },
        { name: 'a,b(c)', type: { kind: 'varchar' } },
        { name: 'say "hi"', type: { kind: 'double' } },
      ],
    });
    expect(formatType(t)).toBe('row("Order Id" bigint, "a,b(c)" varchar, "say ""hi""" double)');
    expect(parseType(formatType(t))).toEqual(t);
  });

  it('names anonymous row fields _col<i>', () => {
    expect(parseType('row(bigint, interval day to second, timestamp(3) with time zone)')).toEqual({
      kind: 'row',
      fields: [
        { name: '_col0', type: { kind: 'bigint' } },
        { name: '_col1', type: { kind: 'interval_day_to_second' } },
        { name: '_col2', type: { kind: 'timestamp', precision: 3, withTimeZone: true } },
      ],
    });
  });

  it('keeps unknown types as text, also nested, and never throws', () => {
    expect(parseType('geometry')).toEqual({ kind: 'unknown', text: 'geometry' });
    expect(parseType('  HyperLogLog ')).toEqual({ kind: 'unknown', text: 'HyperLogLog' });
    expect(parseType('array(geometry(4326))')).toEqual({
      kind: 'array',
      element: { kind: 'unknown', text: 'geometry(4326)' },
    });
    expect(formatType(parseType('map(varchar, qdigest(bigint))'))).toBe('map(varchar, qdigest(bigint))');
    const malformed = [
      '',
      'array(bigint',
      'array()',
      'array(bigint, bigint)',
      'map(varchar)',
      'decimal(0, 0)',
      'decimal(77, 0)',
      'decimal(10, 11)',
      'decimal(a, b)',
      'varchar(-1)',
      'timestamp(13)',
      'time(3) with time zone',
      'interval day',
      'bigint extra',
      'row(a bigint,)',
      'row("unterminated bigint)',
      ')(',
      '((((',
      '"bigint"',
      '123',
    ];
    for (const text of malformed) {
      const t = parseType(text);
      expect(t, text).toEqual({ kind: 'unknown', text: text.trim() });
    }
  });

  it('turns absurd nesting into unknown instead of overflowing the stack', () => {
    const deep = `${'array('.repeat(5000)}bigint${')'.repeat(5000)}`;
    expect(parseType(deep).kind).toBe('unknown');
    const fine = `${'array('.repeat(20)}bigint${')'.repeat(20)}`;
    expect(formatType(parseType(fine))).toBe(fine);
  });

  it('never throws on non-string input', () => {
    expect(parseType(undefined as unknown as string).kind).toBe('unknown');
  });
});
