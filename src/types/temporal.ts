/**
 * Date, time, timestamp and interval text of the wire, parsed by hand: these run once per
 * value on the hot path, where a regex and a `Date.parse` would cost several times more.
 * Functions return NaN / false on anything malformed; callers raise the typed error.
 */

// The canonical text of a date lives with the writers' value text; the decoders write it too.
export { dateText } from '../kit/dateText.ts';

const MS_PER_DAY = 86_400_000;

/** Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's days_from_civil). */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Value of `len` ASCII digits at `at`, or -1 (also when the text ends first). */
function digits(s: string, at: number, len: number): number {
  let n = 0;
  for (let i = at; i < at + len; i++) {
    const c = s.charCodeAt(i) - 48;
    // Past the end charCodeAt is NaN, which no comparison rejects: test for the digits instead.
    if (!(c >= 0 && c <= 9)) return -1;
    n = n * 10 + c;
  }
  return n;
}

/** Scratch result of the parsers below, reused so the hot path allocates nothing. */
interface Scan {
  /** Index just past what was parsed. */
  end: number;
  /** Whole value in the unit of the parser (days, or seconds). */
  whole: number;
  /** Fractional second digits, possibly empty. */
  frac: string;
}

const scan: Scan = { end: 0, whole: 0, frac: '' };

/**
 * `[-]YYYY-MM-DD` (a year of 4 to 7 digits, astronomical: year 0 is 1 BC) or DuckDB's own text of a
 * date before year 1, `YYYY-MM-DD (BC)`, at `from`; sets scan.whole to days since epoch. Seven
 * digits reach DuckDB's extremes (5877642-06-25 (BC) to 5881580-07-10).
 */
function scanDate(s: string, from: number): boolean {
  let i = from;
  const negative = s.charCodeAt(i) === 45; /* - */
  if (negative || s.charCodeAt(i) === 43 /* + */) i++;
  let dash = i;
  while (dash < s.length && s.charCodeAt(dash) !== 45) dash++;
  const yearLength = dash - i;
  // DuckDB's strftime writes a year below 0 unpadded (`-43-03-15`).
  if (yearLength < (negative ? 1 : 4) || yearLength > 7) return false;
  const y = digits(s, i, yearLength);
  if (y < 0 || s.charCodeAt(dash + 3) !== 45) return false;
  const month = digits(s, dash + 1, 2);
  const day = digits(s, dash + 4, 2);
  let year = negative ? -y : y;
  let end = dash + 6;
  if (s.charCodeAt(end) === 32 && s.startsWith('(BC)', end + 1)) {
    if (negative || y === 0) return false;
    year = 1 - y;
    end += 5;
  }
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return false;
  scan.whole = daysFromCivil(year, month, day);
  scan.end = end;
  return true;
}

/** `HH:MM:SS[.fraction]` (1..12 fraction digits) at `from`; sets scan.whole to seconds of day. */
function scanTime(s: string, from: number): boolean {
  const h = digits(s, from, 2);
  const m = digits(s, from + 3, 2);
  const sec = digits(s, from + 6, 2);
  if (h < 0 || h > 23 || m < 0 || m > 59 || sec < 0 || sec > 59) return false;
  if (s.charCodeAt(from + 2) !== 58 || s.charCodeAt(from + 5) !== 58) return false;
  let i = from + 8;
  scan.frac = '';
  if (s.charCodeAt(i) === 46 /* . */) {
    const start = ++i;
    while (i < s.length) {
      const c = s.charCodeAt(i);
      if (c < 48 || c > 57) break;
      i++;
    }
    if (i === start || i - start > 12) return false;
    scan.frac = s.slice(start, i);
  }
  scan.whole = h * 3600 + m * 60 + sec;
  scan.end = i;
  return true;
}

/** Days since 1970-01-01 of a date's text (see scanDate), or NaN. */
export function parseDateDays(s: string): number {
  if (s.length === 10) {
    const days = canonicalDateDays(s);
    if (days === days) return days;
  }
  return parseDateDaysGeneral(s);
}

/** {@link parseDateDays} without its fixed-position path: the reference the tests compare that path with. */
export function parseDateDaysGeneral(s: string): number {
  return scanDate(s, 0) && scan.end === s.length ? scan.whole : Number.NaN;
}

/**
 * Days since the epoch of the canonical `YYYY-MM-DD` starting the text (years 0000-9999, what
 * the service writes for all but BC and 5+ digit years), read at fixed positions; NaN for
 * anything else, which the general parser then reads or rejects. Where both accept a text they
 * agree (a property test compares them). `at`: where the date starts in `s` (a page's text).
 */
export function canonicalDateDays(s: string, at = 0): number {
  if (s.charCodeAt(at + 4) !== 45 || s.charCodeAt(at + 7) !== 45) return Number.NaN;
  const y0 = s.charCodeAt(at + 0) - 48;
  const y1 = s.charCodeAt(at + 1) - 48;
  const y2 = s.charCodeAt(at + 2) - 48;
  const y3 = s.charCodeAt(at + 3) - 48;
  const m0 = s.charCodeAt(at + 5) - 48;
  const m1 = s.charCodeAt(at + 6) - 48;
  const d0 = s.charCodeAt(at + 8) - 48;
  const d1 = s.charCodeAt(at + 9) - 48;
  // Unsigned: a char below '0' wraps to a large number; callers pass at least 10 chars.
  if ((y0 >>> 0) > 9 || (y1 >>> 0) > 9 || (y2 >>> 0) > 9 || (y3 >>> 0) > 9 || (m0 >>> 0) > 9 || (m1 >>> 0) > 9 || (d0 >>> 0) > 9 || (d1 >>> 0) > 9) {
    return Number.NaN;
  }
  const y = y0 * 1000 + y1 * 100 + y2 * 10 + y3;
  const month = m0 * 10 + m1;
  const day = d0 * 10 + d1;
  if (month < 1 || month > 12 || day < 1 || (day > 28 && day > daysInMonth(y, month))) return Number.NaN;
  // daysFromCivil with integer division: years 0..9999 are shifted by one 400-year era to stay positive.
  const yy = (month <= 2 ? y - 1 : y) + 400;
  const era = (yy / 400) | 0;
  const yoe = yy - era * 400;
  const doy = (((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) | 0) + day - 1;
  return (era - 1) * 146_097 + yoe * 365 + ((yoe / 4) | 0) - ((yoe / 100) | 0) + doy - 719_468;
}

/** A timestamp read by {@link scanCanonicalTimestamp}: no strings made. */
export interface CanonicalTimestamp {
  /** Whole seconds since the epoch (UTC). */
  seconds: number;
  /** Index of the first fraction digit, and how many there are (0: no fraction). */
  fracAt: number;
  fracLength: number;
  /** Whether the text ends in ` UTC`. */
  zoned: boolean;
}

/**
 * The canonical timestamp text, `YYYY-MM-DD HH:MM:SS[.f{1,12}][ UTC]` (also with `T`), read at
 * fixed positions into `out`; false for anything else (other zones, BC or 5+ digit years), which
 * {@link parseTimestamp} then reads or rejects. Where both accept a text they agree. `at` and `end`:
 * where the text is in `s` (a page's text); `out.fracAt` is an index in `s`.
 */
export function scanCanonicalTimestamp(s: string, out: CanonicalTimestamp, at = 0, end = s.length): boolean {
  if (end - at < 19) return false;
  const days = canonicalDateDays(s, at);
  if (days !== days) return false;
  const clock = canonicalClockSeconds(s, at + 10);
  if (clock !== clock) return false;
  const fracEnd = canonicalFractionEnd(s, at + 19, end);
  if (fracEnd < 0) return false;
  out.fracAt = at + 20;
  out.fracLength = fracEnd === at + 19 ? 0 : fracEnd - at - 20;
  if (fracEnd === end) out.zoned = false;
  else if (isUtcSuffix(s, fracEnd, end)) out.zoned = true;
  else return false;
  out.seconds = days * 86_400 + clock;
  return true;
}

/** The seconds of the day of ` HH:MM:SS` (or `THH:MM:SS`) at `at`, or NaN; callers pass at least 9 chars. */
function canonicalClockSeconds(s: string, at: number): number {
  const sep = s.charCodeAt(at);
  if ((sep !== 32 && sep !== 84) || s.charCodeAt(at + 3) !== 58 || s.charCodeAt(at + 6) !== 58) return Number.NaN;
  const h0 = s.charCodeAt(at + 1) - 48;
  const h1 = s.charCodeAt(at + 2) - 48;
  const m0 = s.charCodeAt(at + 4) - 48;
  const m1 = s.charCodeAt(at + 5) - 48;
  const s0 = s.charCodeAt(at + 7) - 48;
  const s1 = s.charCodeAt(at + 8) - 48;
  if ((h0 >>> 0) > 2 || (h1 >>> 0) > 9 || (m0 >>> 0) > 5 || (m1 >>> 0) > 9 || (s0 >>> 0) > 5 || (s1 >>> 0) > 9) return Number.NaN;
  const h = h0 * 10 + h1;
  if (h > 23) return Number.NaN;
  return h * 3600 + (m0 * 10 + m1) * 60 + s0 * 10 + s1;
}

/** Index after the `.f{1,12}` fraction at `at` (`at` itself when there is none), or -1 for a fraction of no or too many digits. */
function canonicalFractionEnd(s: string, at: number, end: number): number {
  if (s.charCodeAt(at) !== 46 /* . */) return at;
  let i = at + 1;
  while (i < end) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) break;
    i++;
  }
  return i === at + 1 || i > at + 13 ? -1 : i;
}

/** Whether `s` from `at` to `end` is exactly ` UTC`. */
function isUtcSuffix(s: string, at: number, end: number): boolean {
  return end === at + 4 && s.charCodeAt(at) === 32 && s.charCodeAt(at + 1) === 85 && s.charCodeAt(at + 2) === 84 && s.charCodeAt(at + 3) === 67;
}

/**
 * {@link scanCanonicalTimestamp} of a text that also fits a timestamp column as it is: with a zone
 * exactly when the column has one, and no more fraction digits than its precision.
 */
export function scanFittingTimestamp(s: string, out: CanonicalTimestamp, precision: number, withTimeZone: boolean, at = 0, end = s.length): boolean {
  return scanCanonicalTimestamp(s, out, at, end) && out.zoned === withTimeZone && out.fracLength <= precision;
}

/**
 * The `width` first fraction digits of a canonical timestamp as an integer, right-padded with
 * zeros (digits beyond `width` are dropped, as {@link fracToUnits} does).
 */
export function canonicalFracUnits(s: string, t: CanonicalTimestamp, width: number): number {
  let units = 0;
  const at = t.fracAt;
  const length = t.fracLength;
  for (let k = 0; k < width; k++) units = units * 10 + (k < length ? s.charCodeAt(at + k) - 48 : 0);
  return units;
}

const canonical: CanonicalTimestamp = { seconds: 0, fracAt: 0, fracLength: 0, zoned: false };

/** A parsed timestamp: whole seconds since the epoch (UTC) and the fraction digits. */
export interface TimestampParts {
  seconds: number;
  frac: string;
  /** Whether the text carried a zone (`UTC`, `Z`, `+02:00`); its offset is already applied. */
  zoned: boolean;
}

/**
 * `YYYY-MM-DD[ T]HH:MM:SS[.f{1,12}][ zone]`, zone `UTC`, `Z` or `±HH:MM`. Without a zone the
 * wall clock is read as UTC. Returns false when malformed. Writes into `out`.
 */
export function parseTimestamp(s: string, out: TimestampParts): boolean {
  if (scanCanonicalTimestamp(s, canonical)) {
    out.seconds = canonical.seconds;
    out.frac = canonical.fracLength === 0 ? '' : s.slice(canonical.fracAt, canonical.fracAt + canonical.fracLength);
    out.zoned = canonical.zoned;
    return true;
  }
  return parseTimestampGeneral(s, out);
}

/** {@link parseTimestamp} without its fixed-position path: the reference the tests compare that path with. */
export function parseTimestampGeneral(s: string, out: TimestampParts): boolean {
  if (!scanDate(s, 0)) return false;
  const sep = s.charCodeAt(scan.end);
  if (sep !== 32 && sep !== 84 /* T */) return false;
  const days = scan.whole;
  if (!scanTime(s, scan.end + 1)) return false;
  let seconds = days * 86_400 + scan.whole;
  let i = scan.end;
  out.frac = scan.frac;
  out.zoned = false;
  if (i < s.length) {
    if (s.charCodeAt(i) === 32) i++;
    const zone = s.slice(i);
    if (zone === 'UTC' || zone === 'Z' || zone === 'utc') {
      out.zoned = true;
    } else if (/^[+-]\d{2}:\d{2}$/.test(zone)) {
      const offset = (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6))) * 60;
      if (offset > 18 * 3600) return false;
      seconds -= zone.charCodeAt(0) === 45 ? -offset : offset;
      out.zoned = true;
    } else {
      return false;
    }
  }
  out.seconds = seconds;
  return true;
}

/** Microseconds of day of `HH:MM:SS[.f]`, or NaN; NaN too when digits beyond the 6th are not 0. */
export function parseTimeMicros(s: string): number {
  if (isEndOfDay(s)) return 86_400_000_000;
  if (!scanTime(s, 0) || scan.end !== s.length) return Number.NaN;
  const { units: micros, exact } = fracToUnits(scan.frac, 6);
  return exact ? scan.whole * 1_000_000 + micros : Number.NaN;
}

/** Validate `HH:MM:SS[.f]` without converting. */
export function isTimeText(s: string): boolean {
  return isEndOfDay(s) || (scanTime(s, 0) && scan.end === s.length);
}

/** `24:00:00[.000...]`: the end of a day, which a time of day (not a timestamp) may be. */
function isEndOfDay(s: string): boolean {
  return s.startsWith('24:00:00') && (s.length === 8 || /^\.0{1,12}$/.test(s.slice(8)));
}

const unitsScratch = { units: 0, exact: true };

/**
 * The first `width` fraction digits as an integer (right-padded), and whether the digits
 * beyond `width` are all zero.
 */
export function fracToUnits(frac: string, width: number): { units: number; exact: boolean } {
  let n = 0;
  for (let i = 0; i < width; i++) n = n * 10 + (i < frac.length ? frac.charCodeAt(i) - 48 : 0);
  let exact = true;
  for (let i = width; i < frac.length; i++) if (frac.charCodeAt(i) !== 48) exact = false;
  unitsScratch.units = n;
  unitsScratch.exact = exact;
  return unitsScratch;
}

/** Epoch milliseconds of a Date-precision timestamp (fraction truncated to ms). */
export function timestampMillis(parts: TimestampParts): number {
  return parts.seconds * 1000 + fracToUnits(parts.frac, 3).units;
}

/**
 * `interval day to second` text as milliseconds: `[-]D HH:MM:SS[.fff]` (Trino's form) or
 * `[-]HH:MM:SS[.fff]`. NaN when malformed or when digits beyond milliseconds are not zero.
 */
export function parseIntervalDayToSecondMs(s: string): number {
  let i = 0;
  const negative = s.charCodeAt(0) === 45;
  if (negative) i++;
  let days = 0;
  const space = s.indexOf(' ', i);
  if (space >= 0) {
    if (space === i || space - i > 9) return Number.NaN;
    days = digits(s, i, space - i);
    if (days < 0) return Number.NaN;
    i = space + 1;
  }
  if (!scanTime(s, i) || scan.end !== s.length) return Number.NaN;
  const { units: ms, exact } = fracToUnits(scan.frac, 3);
  if (!exact) return Number.NaN;
  const total = days * MS_PER_DAY + scan.whole * 1000 + ms;
  return negative ? -total : total;
}

/** `interval year to month` text `[-]Y-M` (Trino's form) as months, or NaN. */
export function parseIntervalYearToMonth(s: string): number {
  const match = /^(-?)(\d{1,9})-(\d{1,2})$/.exec(s);
  if (match === null) return Number.NaN;
  const months = Number(match[2]) * 12 + Number(match[3]);
  if (Number(match[3]) > 11) return Number.NaN;
  return match[1] === '-' ? -months : months;
}

/** Days since epoch of a Date (UTC calendar day). */
export function dateToDays(d: Date): number {
  return Math.floor(d.getTime() / MS_PER_DAY);
}

export { MS_PER_DAY };
