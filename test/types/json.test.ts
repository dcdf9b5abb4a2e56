import { afterEach, describe, expect, it, vi } from 'vitest';
import { needsExactParse, parseJsonLossless, stringifyLossless } from '../../src/types/index.ts';

/** How parseJsonLossless parsed `text`: the JSON.parse calls it made, with or without a reviver. */
function parsePath(text: string): string[] {
  const spy = vi.spyOn(JSON, 'parse');
  try {
    parseJsonLossless(text);
    return spy.mock.calls.map((args) => (args[1] === undefined ? 'plain' : 'reviver'));
  } finally {
    spy.mockRestore();
  }
}

/** The reference: every integer token beyond 2^53 from its source text. */
function reviveExact(_key: string, value: unknown, context?: { source?: string }): unknown {
  return typeof value === 'number' && !Number.isSafeInteger(value) && context?.source !== undefined && /^-?\d+$/.test(context.source) ? BigInt(context.source) : value;
}

describe('parseJsonLossless', () => {
  afterEach(() => vi.restoreAllMocks());

  it('pays for exactness only on pages that need it, and rarely with a reviver', () => {
    expect(parsePath('{"a":[1,2,9007199254740991],"s":"123456789012345678901234567890"}')).toEqual(['plain']);
    expect(parsePath('{"a":[1,2,9007199254740993]}')).toEqual(['plain']);
    // Text inside a string that looks like a token: the rewrite fails, the reviver takes over.
    expect(parsePath('{"s":"x:12345678901234567890","n":12345678901234567890}')).toEqual(['plain', 'reviver']);
    // A page with a NUL escape cannot use the marker: straight to the reviver.
    expect(parsePath('{"s":"\\u0000","n":12345678901234567890}')).toEqual(['reviver']);
  });

  it('keeps integers beyond 2^53 exact as bigint, positive and negative, nested anywhere', () => {
    const text =
      '{"rows":[{"a":9223372036854775807,"b":[-9223372036854775808,[18446744073709551616]],' +
      '"c":{"d":{"e":-170141183460469231731687303715884105728}}}],"n":123}';
    expect(parseJsonLossless(text)).toEqual({
      rows: [
        {
          a: 9223372036854775807n,
          b: [-9223372036854775808n, [18446744073709551616n]],
          c: { d: { e: -170141183460469231731687303715884105728n } },
        },
      ],
      n: 123,
    });
  });

  it('is exact right at the 2^53 boundary and keeps safe integers as numbers', () => {
    const parsed = parseJsonLossless('[9007199254740991, -9007199254740991, 9007199254740992, 9007199254740993, 1234567890123456]');
    expect(parsed).toEqual([9007199254740991, -9007199254740991, 9007199254740992n, 9007199254740993n, 1234567890123456]);
    expect(typeof (parsed as unknown[])[0]).toBe('number');
  });

  it('leaves non-integers, exponents and digits inside strings untouched', () => {
    const text =
      '{"f":12345678901234567.5,"e":1e300,"s":"123456789012345678901234567890","k":"a:12345678901234567","big":12345678901234567890}';
    expect(parseJsonLossless(text)).toEqual({
      f: 12345678901234567.5,
      e: 1e300,
      s: '123456789012345678901234567890',
      k: 'a:12345678901234567',
      big: 12345678901234567890n,
    });
  });

  it('handles whitespace before numbers and a bare top-level number', () => {
    expect(parseJsonLossless('[\n  99999999999999999999 ,\t-99999999999999999999]')).toEqual([
      99999999999999999999n,
      -99999999999999999999n,
    ]);
    expect(parseJsonLossless('  18446744073709551615 ')).toBe(18446744073709551615n);
  });

  it('takes the fast path when no long number token exists', () => {
    expect(needsExactParse('{"a":123456789012345,"s":"123456789012345678901234567890"}')).toBe(false);
    expect(needsExactParse('{"a":9007199254740991}')).toBe(false);
    expect(needsExactParse('{"a":9007199254740993}')).toBe(true);
    expect(needsExactParse('{"a":12345678901234567.5,"b":12345678901234567e3}')).toBe(false);
    expect(needsExactParse('[1,-12345678901234567]')).toBe(true);
    // Identical results on both paths for pages without unsafe integers.
    const text = '{"a":[1,2.5,-3e5,"x"],"b":null,"c":true}';
    expect(parseJsonLossless(text)).toEqual(JSON.parse(text));
  });

  it('stays exact when a string looks like a number token (the rewrite falls back)', () => {
    const text = '{"s":"x:12345678901234567890","t":"[99999999999999999999]","n":-12345678901234567890}';
    expect(parseJsonLossless(text)).toEqual({ s: 'x:12345678901234567890', t: '[99999999999999999999]', n: -12345678901234567890n });
  });

  it('stays exact when strings hold NUL characters or escapes', () => {
    const text = '{"s":"\\u0000123","z":"\\"12345678901234567890\\"","n":[12345678901234567890]}';
    expect(parseJsonLossless(text)).toEqual({ s: '\u0000123', z: '"12345678901234567890"', n: [12345678901234567890n] });
    const withNul = '["\\u0000" , 12345678901234567890]';
    expect(parseJsonLossless(withNul)).toEqual(['\u0000', 12345678901234567890n]);
  });

  it('finds every unsafe integer of a long page, wherever it falls', () => {
    // Sixteen shifts, so the sampled scan meets the numbers at every alignment.
    for (let pad = 0; pad < 16; pad++) {
      const values = Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? 2n ** 53n + BigInt(i) : -(2n ** 63n) + BigInt(i)));
      const text = `{"${'p'.repeat(pad)}":[${values.map((v, i) => `{"s":"${'7'.repeat(i)}","v": ${v},"f":0.5${'3'.repeat(i % 20)}}`).join(',')}]}`;
      const parsed = parseJsonLossless(text) as Record<string, Array<{ v: bigint }>>;
      expect(parsed['p'.repeat(pad)]!.map((r) => r.v)).toEqual(values);
    }
  });

  it('agrees with the reviver on generated pages of numbers and digit-laden strings, at every alignment', () => {
    let seed = 7;
    const rnd = (): number => {
      // mulberry32
      seed = (seed + 0x6d2b79f5) >>> 0;
      let t = Math.imul(seed ^ (seed >>> 15), seed | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
    };
    const digitRun = (n: number): string => Array.from({ length: n }, (_, k) => String(k === 0 ? 1 + Math.floor(rnd() * 9) : Math.floor(rnd() * 10))).join('');
    const value = (): string => {
      const n = Math.floor(rnd() * 24);
      switch (Math.floor(rnd() * 8)) {
        case 0:
          return digitRun(1 + n);
        case 1:
          return `-${digitRun(1 + n)}`;
        case 2:
          return `${digitRun(1 + n)}.${digitRun(1 + Math.floor(rnd() * 20))}`;
        case 3:
          return `${digitRun(1 + n)}e${Math.floor(rnd() * 5)}`;
        case 4:
          return `"${digitRun(n)}-${digitRun(Math.floor(rnd() * 20))} ${digitRun(Math.floor(rnd() * 20))}"`;
        case 5:
          return `"a:${digitRun(1 + n)}"`;
        case 6:
          return `[ ${digitRun(1 + n)} ,${digitRun(1 + n)}]`;
        default:
          return `"2026-01-01 00:00:01.${digitRun(6)} UTC"`;
      }
    };
    for (let page = 0; page < 300; page++) {
      const text = `{"${'p'.repeat(page % 16)}":[${Array.from({ length: 40 }, () => `{"v":${value()},"w":${value()}}`).join(',')}]}`;
      expect(parseJsonLossless(text), text).toEqual(JSON.parse(text, reviveExact));
    }
  });

  it('throws SyntaxError on invalid JSON on both paths', () => {
    expect(() => parseJsonLossless('{"a":')).toThrow(SyntaxError);
    expect(() => parseJsonLossless('{"a":12345678901234567890')).toThrow(SyntaxError);
  });
});

describe('stringifyLossless', () => {
  it('writes bigints as exact JSON numbers', () => {
    expect(stringifyLossless({ a: -(2n ** 255n), b: [1n, 'x'] })).toBe(
      `{"a":${-(2n ** 255n)},"b":[1,"x"]}`,
    );
    expect(parseJsonLossless(stringifyLossless({ a: 2n ** 64n }))).toEqual({ a: 2n ** 64n });
  });
});
