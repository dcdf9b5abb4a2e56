// The fixed-width records of an encoding's index (encodedResult.ts, arrowEncoding.ts): two
// 12-digit upper-case hex numbers and '\n'. Written once a row by the JSON and CSV encoders, so
// the writer makes its digits with shifts and a table, no division a digit.

const HEX = 12;
/** Bytes of one index record: two numbers and '\n'. */
export const INDEX_RECORD_BYTES = 2 * HEX + 1;

const DIGITS = Buffer.from('0123456789ABCDEF', 'latin1');
/** 2^24: a number below 2^48 is two 6-digit halves of 24 bits. */
const HALF = 0x100_0000;

/** An index record (two 12-digit hex numbers, '\n') at `at`. */
export function writeRecord(buf: Buffer, at: number, start: number, bytes: number): void {
  writeHex(buf, at, start);
  writeHex(buf, at + HEX, bytes);
  buf[at + 2 * HEX] = 0x0a;
}

/** `n` (below 2^48) as 12 upper-case hex digits at `at`. */
function writeHex(buf: Buffer, at: number, n: number): void {
  const high = Math.floor(n / HALF);
  let lo = n - high * HALF;
  let hi = high;
  for (let i = at + HEX - 1; i >= at + HEX / 2; i--) {
    buf[i] = DIGITS[lo & 15]!;
    lo >>>= 4;
  }
  for (let i = at + HEX / 2 - 1; i >= at; i--) {
    buf[i] = DIGITS[hi & 15]!;
    hi >>>= 4;
  }
}

export interface IndexRecord {
  start: number;
  bytes: number;
}

export function parseRecord(buf: Buffer, at: number): IndexRecord {
  const num = (k: number): number => Number.parseInt(buf.toString('latin1', at + k * HEX, at + (k + 1) * HEX), 16);
  return { start: num(0), bytes: num(1) };
}
