import { describe, expect, it } from 'vitest';
import {
  dateText,
  parseDateDays,
  parseIntervalDayToSecondMs,
  parseIntervalYearToMonth,
  parseTimeMicros,
  parseTimestamp,
  timestampMillis,
  type TimestampParts,
} from '../../src/types/temporal.ts';

const DAY = 86_400_000;

describe('temporal parsing', () => {
  it('reads dates before year 1 and after 9999 in DuckDB\'s forms, and dateText writes them back canonically', () => {
    const cases: [string, number, string][] = [
      ['0001-12-31 (BC)', -719_163, '0000-12-31'],
      ['0044-03-15 (BC)', -735_160, '-0043-03-15'],
      ['-43-03-15', -735_160, '-0043-03-15'],
      ['0000-02-29', -719_469, '0000-02-29'],
      ['10000-01-01', 2_932_897, '10000-01-01'],
      ['+010000-01-01', 2_932_897, '10000-01-01'],
      ['5881580-07-10', 2_147_483_646, '5881580-07-10'],
      ['5877642-06-25 (BC)', -2_147_483_646, '-5877641-06-25'],
    ];
    for (const [text, days, canonical] of cases) {
      expect(parseDateDays(text), text).toBe(days);
      expect(dateText(days), text).toBe(canonical);
      expect(parseDateDays(canonical), canonical).toBe(days);
    }
    for (const bad of ['0000-12-31 (BC)', '-0001-12-31 (BC)', '44-03-15', '0002-02-29 (BC)', '12345678-01-01']) expect(parseDateDays(bad), bad).toBeNaN();
  });

  it('dateText agrees with Date on every day from 1600 to 2400', () => {
    for (let ms = Date.UTC(1600, 0, 1); ms <= Date.UTC(2400, 11, 31); ms += DAY) {
      const text = new Date(ms).toISOString().slice(0, 10);
      if (dateText(ms / DAY) !== text) expect.fail(`${ms / DAY}: ${dateText(ms / DAY)} !== ${text}`);
    }
  });

  it('agrees with Date.UTC on every day from 1600 to 2400', () => {
    for (let ms = Date.UTC(1600, 0, 1); ms <= Date.UTC(2400, 11, 31); ms += DAY) {
      const text = new Date(ms).toISOString().slice(0, 10);
      if (parseDateDays(text) !== ms / DAY) expect.fail(`${text}: ${parseDateDays(text)} !== ${ms / DAY}`);
    }
  });

  it('handles years outside 1000..9999 and rejects malformed dates', () => {
    expect(parseDateDays('0000-03-01')).toBe(Date.UTC(2000, 2, 1) / DAY - 730_485);
    expect(parseDateDays('-0001-12-31') * DAY).toBe(new Date('-000001-12-31T00:00:00Z').getTime());
    expect(parseDateDays('+10000-01-01') * DAY).toBe(new Date('+010000-01-01T00:00:00Z').getTime());
    for (const bad of ['', '2026-02-29', '1900-02-29', '2026-04-31', '2026-01-01x', '2026-01-1', '99-01-01']) {
      expect(parseDateDays(bad), bad).toBeNaN();
    }
    expect(parseDateDays('2000-02-29')).toBe(Date.UTC(2000, 1, 29) / DAY);
  });

  it('rejects a date or timestamp cut short inside its last field', () => {
    const parts: TimestampParts = { seconds: 0, frac: '', zoned: false };
    for (const cut of ['2026-10-31 23:59:5', '2026-10-31 23:5', '2026-10-31 2', '2026-10-31T23:59:5']) expect(parseTimestamp(cut, parts), cut).toBe(false);
    for (const cut of ['2026-10-3', '2026-1']) expect(parseDateDays(cut), cut).toBeNaN();
    expect(parseTimestamp('2026-10-31 23:59:05', parts)).toBe(true);
  });

  it('parses timestamps with zones, offsets and up to 12 fraction digits', () => {
    const parts: TimestampParts = { seconds: 0, frac: '', zoned: false };
    expect(parseTimestamp('2026-11-20 10:15:30.123456789012', parts)).toBe(true);
    expect(parts).toEqual({ seconds: Date.UTC(2026, 10, 20, 10, 15, 30) / 1000, frac: '123456789012', zoned: false });
    expect(parseTimestamp('2026-11-20T10:15:30Z', parts)).toBe(true);
    expect(parts.zoned).toBe(true);
    expect(parseTimestamp('2026-11-20 05:45:30.5 -04:30', parts)).toBe(true);
    expect(timestampMillis(parts)).toBe(Date.UTC(2026, 10, 20, 10, 15, 30, 500));
    expect(parseTimestamp('1969-12-31 23:59:59.999 UTC', parts)).toBe(true);
    expect(timestampMillis(parts)).toBe(-1);
    for (const bad of ['2026-11-20', '2026-11-20 10:15', '2026-11-20 25:00:00', '2026-11-20 10:15:30.', '2026-11-20 10:15:30 +25:00', '2026-11-20 10:15:30 CET']) {
      expect(parseTimestamp(bad, parts), bad).toBe(false);
    }
  });

  it('parses time of day to microseconds, refusing lost digits', () => {
    expect(parseTimeMicros('23:59:59.999999')).toBe(86_399_999_999);
    expect(parseTimeMicros('00:00:01.5')).toBe(1_500_000);
    expect(parseTimeMicros('00:00:01.500000000')).toBe(1_500_000);
    expect(parseTimeMicros('00:00:01.5000001')).toBeNaN();
  });

  it('parses Trino interval text', () => {
    expect(parseIntervalDayToSecondMs('0 00:00:00.000')).toBe(0);
    expect(parseIntervalDayToSecondMs('106751991 04:00:54.775')).toBe(106_751_991 * DAY + 4 * 3_600_000 + 54_775);
    expect(parseIntervalDayToSecondMs('-0 00:00:00.001')).toBe(-1);
    expect(parseIntervalDayToSecondMs('1 2:03:04')).toBeNaN();
    expect(parseIntervalYearToMonth('178956970-7')).toBe(2_147_483_647);
    expect(parseIntervalYearToMonth('0-0')).toBe(0);
    expect(parseIntervalYearToMonth('1.5')).toBeNaN();
  });
});
