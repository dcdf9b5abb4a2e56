// Arrow columns read straight from DuckDB's vectors: a chunk's values are copied (or widened) from
// the vector's memory into the Arrow buffers, with no JS value made per row. For the types whose
// DuckDB layout is (nearly) the Arrow layout of the connector's mapping (types.md): integers,
// floats, booleans (as bits), dates (days), timestamps (in the field's unit), decimals and UBIGINT
// (as 128-bit integers) and text (offsets and UTF-8 bytes), this builds the Arrow data the
// per-value path of arrowPage.ts builds (DuckDB renders the value, the connector's decoder and
// column builder make its Arrow slot), many times faster.
//
// Dates and timestamps are taken here only within years 1-9999 (finite): outside them the
// per-value path renders and checks the value its own way, so `append` says no and the caller
// builds the page that way. Each value keeps one definition, the connector's.
import duckdb from '@duckdb/node-bindings';
import { DuckDBTypeId, type DuckDBType } from '@duckdb/node-api';
import { makeData, type Data, type DataType } from 'apache-arrow';

/** One column of an Arrow page, filled chunk by chunk from DuckDB's vectors. */
export interface VectorColumn {
  /**
   * Appends values [from, from + n) of `vector` (a flat vector of the column's DuckDB type); false
   * (the column is then unusable) when one of them must take the per-value path.
   */
  append(vector: duckdb.Vector, from: number, n: number): boolean;
  /** The values appended, as Arrow data of the column's type (over the column's buffers: nothing is appended after). */
  finish(): Data;
}

/**
 * The column reading `type` straight from its vectors into Arrow data of `arrow` (the connector's
 * type for the column), or undefined when `type` takes the per-value path. Its buffers start with
 * room for `rows` rows (the rows the page will hold, when known: they then never grow).
 */
export function vectorColumn(type: DuckDBType, arrow: DataType, rows?: number): VectorColumn | undefined {
  const capacity = initialRows(rows);
  const fixed = (width: number, slot: number, copy: Copy): VectorColumn => new FixedColumn(arrow, width, slot, copy, capacity);
  switch (type.typeId) {
    case DuckDBTypeId.BOOLEAN:
      return new BoolColumn(arrow, capacity);
    case DuckDBTypeId.TINYINT:
      return fixed(1, 1, same(1));
    case DuckDBTypeId.SMALLINT:
      return fixed(2, 2, same(2));
    case DuckDBTypeId.INTEGER:
    case DuckDBTypeId.FLOAT:
      return fixed(4, 4, same(4));
    case DuckDBTypeId.BIGINT:
    case DuckDBTypeId.DOUBLE:
      return fixed(8, 8, same(8));
    // Unsigned integers widen to the next signed size (typeNames.ts); UBIGINT is a decimal(20, 0).
    case DuckDBTypeId.UTINYINT:
      return fixed(1, 2, widened(1, 2, false));
    case DuckDBTypeId.USMALLINT:
      return fixed(2, 4, widened(2, 4, false));
    case DuckDBTypeId.UINTEGER:
      return fixed(4, 8, widened(4, 8, false));
    case DuckDBTypeId.UBIGINT:
      return fixed(8, 16, widened(8, 16, false));
    case DuckDBTypeId.DECIMAL: {
      // DuckDB stores a decimal's unscaled value in 2, 4, 8 or 16 bytes by its width.
      const width = type.width <= 4 ? 2 : type.width <= 9 ? 4 : type.width <= 18 ? 8 : 16;
      return fixed(width, 16, width === 16 ? same(16) : widened(width, 16, true));
    }
    case DuckDBTypeId.DATE:
      return fixed(4, 4, daysWithin(DAYS_FIRST, DAYS_LAST));
    case DuckDBTypeId.TIMESTAMP:
    case DuckDBTypeId.TIMESTAMP_TZ:
      return fixed(8, 8, int64Within(bounds(1_000_000n)));
    case DuckDBTypeId.TIMESTAMP_MS:
      return fixed(8, 8, int64Within(bounds(1000n)));
    case DuckDBTypeId.TIMESTAMP_NS:
      // Years 1677-2262, all within 1-9999; the infinities are the int64 extremes.
      return fixed(8, 8, int64Within([{ hi: -0x80000000, lo: 2 }, { hi: 0x7fffffff, lo: 0xfffffffe }]));
    case DuckDBTypeId.TIMESTAMP_S:
      // timestamp(0) is milliseconds in Arrow.
      return fixed(8, 8, secondsToMillis);
    case DuckDBTypeId.VARCHAR:
      return type.alias === undefined ? new Utf8Column(arrow, capacity) : undefined;
    default:
      return undefined;
  }
}

/**
 * Copies `n` values of `src` (DuckDB's slots) into `dst` from byte `at` (Arrow's slots); false
 * when one of them must take the per-value path. Slots of nulls may hold anything: they are
 * zeroed after.
 */
type Copy = (src: Uint8Array, n: number, dst: Uint8Array, at: number) => boolean;

const same = (width: number): Copy => (src, n, dst, at) => {
  dst.set(src.subarray(0, n * width), at);
  return true;
};

/**
 * Little-endian integers of `from` bytes widened to `to` bytes, sign-extended or not. Whole 32-bit
 * words at a time where both sizes are words (a DECIMAL(18, 4) of 8 bytes to Arrow's 16: a quarter
 * of the byte loop's steps, on every value of every such column of a first read); bytes otherwise.
 */
const widened = (from: number, to: number, signed: boolean): Copy => (from % 4 === 0 ? widenedWords(from >> 2, to >> 2, signed, widenedBytes(from, to, signed)) : widenedBytes(from, to, signed));

const widenedWords = (fromWords: number, toWords: number, signed: boolean, unaligned: Copy): Copy => (src, n, dst, at) => {
  if ((dst.byteOffset + at) % 4 !== 0) return unaligned(src, n, dst, at);
  const s = words(src, n * fromWords * 4);
  const d = new Uint32Array(dst.buffer, dst.byteOffset + at, n * toWords);
  for (let i = 0; i < n; i++) {
    const si = i * fromWords;
    const di = i * toWords;
    for (let k = 0; k < fromWords; k++) d[di + k] = s[si + k]!;
    const fill = signed && (s[si + fromWords - 1]! & 0x8000_0000) !== 0 ? 0xffff_ffff : 0;
    for (let k = fromWords; k < toWords; k++) d[di + k] = fill;
  }
  return true;
};

const widenedBytes = (from: number, to: number, signed: boolean): Copy => (src, n, dst, at) => {
  for (let i = 0; i < n; i++) {
    const s = i * from;
    const d = at + i * to;
    for (let b = 0; b < from; b++) dst[d + b] = src[s + b]!;
    const fill = signed && (src[s + from - 1]! & 0x80) !== 0 ? 0xff : 0;
    for (let b = from; b < to; b++) dst[d + b] = fill;
  }
  return true;
};

/** The vector's memory as 32-bit words (aligned: copied when DuckDB's pointer is not). */
function words(src: Uint8Array, bytes: number): Uint32Array {
  const aligned = src.byteOffset % 4 === 0 ? src : src.slice(0, bytes);
  return new Uint32Array(aligned.buffer, aligned.byteOffset, bytes >> 2);
}

// Years 1-9999 as days, and as seconds, since 1970-01-01.
const DAYS_FIRST = -719_162;
const DAYS_LAST = 2_932_896;
const SECONDS_FIRST = -62_135_596_800n;
const SECONDS_END = 253_402_300_800n;

const daysWithin = (first: number, last: number): Copy => (src, n, dst, at) => {
  const days = words(src, n * 4);
  for (let i = 0; i < n; i++) {
    const d = days[i]! | 0;
    if (d < first || d > last) return false;
  }
  dst.set(src.subarray(0, n * 4), at);
  return true;
};

/** A signed 64-bit integer as its high word (signed) and low word (unsigned). */
interface Int64Words {
  hi: number;
  lo: number;
}

function int64Words(v: bigint): Int64Words {
  return { hi: Number(BigInt.asIntN(32, v >> 32n)), lo: Number(BigInt.asUintN(32, v)) };
}

/** Years 1-9999 in units of 1/perSecond second: the first and the last instant. */
function bounds(perSecond: bigint): [Int64Words, Int64Words] {
  return [int64Words(SECONDS_FIRST * perSecond), int64Words(SECONDS_END * perSecond - 1n)];
}

const below = (hi: number, lo: number, b: Int64Words): boolean => hi < b.hi || (hi === b.hi && lo < b.lo);
const above = (hi: number, lo: number, b: Int64Words): boolean => hi > b.hi || (hi === b.hi && lo > b.lo);

/** Int64 values copied when all lie in [first, last]. */
const int64Within = ([first, last]: [Int64Words, Int64Words]): Copy => (src, n, dst, at) => {
  const w = words(src, n * 8);
  for (let i = 0; i < n; i++) {
    const lo = w[2 * i]!;
    const hi = w[2 * i + 1]! | 0;
    if (below(hi, lo, first) || above(hi, lo, last)) return false;
  }
  dst.set(src.subarray(0, n * 8), at);
  return true;
};

const [SECONDS_MIN, SECONDS_MAX] = bounds(1n);

/** TIMESTAMP_S (seconds) to Arrow milliseconds, years 1-9999 (exact in a double). */
const secondsToMillis: Copy = (src, n, dst, at) => {
  const w = words(src, n * 8);
  const out = new Uint32Array(dst.buffer, dst.byteOffset + at, n * 2);
  for (let i = 0; i < n; i++) {
    const lo = w[2 * i]!;
    const hi = w[2 * i + 1]! | 0;
    if (below(hi, lo, SECONDS_MIN) || above(hi, lo, SECONDS_MAX)) return false;
    const ms = (hi * 0x1_0000_0000 + lo) * 1000;
    out[2 * i] = ms >>> 0;
    out[2 * i + 1] = Math.floor(ms / 0x1_0000_0000) >>> 0;
  }
  return true;
};

/** A byte buffer that grows by doubling. */
class Bytes {
  buf: Uint8Array;

  constructor(bytes: number) {
    this.buf = new Uint8Array(bytes);
  }

  /** Room for `bytes` bytes in all. */
  reserve(bytes: number): Uint8Array {
    if (bytes > this.buf.length) {
      const next = new Uint8Array(Math.max(this.buf.length * 2, bytes));
      next.set(this.buf);
      this.buf = next;
    }
    return this.buf;
  }
}

const INITIAL_ROWS = 2048;
/** Rows a column makes room for at first, whatever the page's size: past them, its buffers grow. */
const MAX_INITIAL_ROWS = 65_536;

const initialRows = (rows: number | undefined): number => Math.max(1, Math.min(rows ?? INITIAL_ROWS, MAX_INITIAL_ROWS));

const valid = (mask: Uint8Array, i: number): boolean => (mask[i >> 3]! & (1 << (i & 7))) !== 0;

/**
 * A column's validity bitmap, from DuckDB's validity masks (64-bit words, bit set = valid: the
 * Arrow bitmap's bit order). None until the first null, as the connector's builders: a column
 * without nulls carries no bitmap.
 */
class VectorValidity {
  #bits: Bytes | undefined;
  #nullCount = 0;

  /**
   * Takes the validity of the vector's rows [from, from + n), after the `at` rows taken. Returns
   * DuckDB's mask when one of them is null (the caller zeroes their slots), else undefined.
   */
  add(vector: duckdb.Vector, at: number, from: number, n: number): Uint8Array | undefined {
    const mask = duckdb.vector_get_validity(vector, Math.ceil((from + n) / 64) * 8) as Uint8Array | null;
    const nulls = mask === null ? 0 : countNulls(mask, from, n);
    if (nulls === 0) {
      if (this.#bits !== undefined) setValid(this.#bits.reserve((at + n + 7) >> 3), at, at + n);
      return undefined;
    }
    if (this.#bits === undefined) {
      this.#bits = new Bytes(Math.max(64, (at + n + 7) >> 3));
      setValid(this.#bits.buf, 0, at);
    }
    const bits = this.#bits.reserve((at + n + 7) >> 3);
    for (let i = 0; i < n; i++) {
      const j = at + i;
      if (valid(mask!, from + i)) bits[j >> 3]! |= 1 << (j & 7);
      else bits[j >> 3]! &= ~(1 << (j & 7));
    }
    this.#nullCount += nulls;
    return mask!;
  }

  take(length: number): { nullCount: number; nullBitmap: Uint8Array | undefined } {
    if (this.#bits === undefined) return { nullCount: 0, nullBitmap: undefined };
    const bitmap = this.#bits.buf.slice(0, (length + 7) >> 3);
    // Bits past the last row are zero: the same rows always give the same bytes.
    if ((length & 7) !== 0) bitmap[bitmap.length - 1]! &= (1 << (length & 7)) - 1;
    return { nullCount: this.#nullCount, nullBitmap: bitmap };
  }
}

/** Nulls among rows [from, from + n) of a validity mask; whole bytes of valid rows at a time. */
function countNulls(mask: Uint8Array, from: number, n: number): number {
  let nulls = 0;
  for (let i = from, end = from + n; i < end; ) {
    if ((i & 7) === 0 && i + 8 <= end && mask[i >> 3] === 0xff) {
      i += 8;
      continue;
    }
    if (!valid(mask, i)) nulls++;
    i++;
  }
  return nulls;
}

/** Marks rows [from, to) valid. */
function setValid(bits: Uint8Array, from: number, to: number): void {
  for (let j = from; j < to; j++) bits[j >> 3]! |= 1 << (j & 7);
}

/** Fixed-width slots: `width` bytes a value in DuckDB, `slot` in Arrow. A null's slot is zero. */
class FixedColumn implements VectorColumn {
  readonly #type: DataType;
  readonly #width: number;
  readonly #slot: number;
  readonly #copy: Copy;
  readonly #data: Bytes;
  readonly #validity = new VectorValidity();
  #length = 0;

  constructor(type: DataType, width: number, slot: number, copy: Copy, capacity: number) {
    this.#type = type;
    this.#width = width;
    this.#slot = slot;
    this.#copy = copy;
    this.#data = new Bytes(capacity * slot);
  }

  append(vector: duckdb.Vector, from: number, n: number): boolean {
    const at = this.#length;
    const nulls = this.#validity.add(vector, at, from, n);
    const src = duckdb.vector_get_data(vector, (from + n) * this.#width).subarray(from * this.#width);
    const dst = this.#data.reserve((at + n) * this.#slot);
    if (!this.#copy(src, n, dst, at * this.#slot)) return false;
    if (nulls !== undefined) {
      for (let i = 0; i < n; i++) if (!valid(nulls, from + i)) dst.fill(0, (at + i) * this.#slot, (at + i + 1) * this.#slot);
    }
    this.#length = at + n;
    return true;
  }

  finish(): Data {
    const length = this.#length;
    return makeData({ type: this.#type, length, data: this.#data.buf.subarray(0, length * this.#slot), ...this.#validity.take(length) } as never);
  }
}

/** DuckDB's booleans (a byte each) as Arrow's bits. */
class BoolColumn implements VectorColumn {
  readonly #type: DataType;
  readonly #bits: Bytes;
  readonly #validity = new VectorValidity();
  #length = 0;

  constructor(type: DataType, capacity: number) {
    this.#type = type;
    this.#bits = new Bytes((capacity + 7) >> 3);
  }

  append(vector: duckdb.Vector, from: number, n: number): boolean {
    const at = this.#length;
    const nulls = this.#validity.add(vector, at, from, n);
    const src = duckdb.vector_get_data(vector, from + n);
    const bits = this.#bits.reserve((at + n + 7) >> 3);
    for (let i = 0; i < n; i++) {
      const j = at + i;
      if (src[from + i] !== 0 && (nulls === undefined || valid(nulls, from + i))) bits[j >> 3]! |= 1 << (j & 7);
      else bits[j >> 3]! &= ~(1 << (j & 7));
    }
    this.#length = at + n;
    return true;
  }

  finish(): Data {
    const length = this.#length;
    const data = this.#bits.buf.subarray(0, (length + 7) >> 3);
    // Bits past the last row are zero: the same rows always give the same bytes.
    if ((length & 7) !== 0) data[data.length - 1]! &= (1 << (length & 7)) - 1;
    return makeData({ type: this.#type, length, data, ...this.#validity.take(length) } as never);
  }
}

/** Utf8's offsets are int32: one batch holds at most this many bytes of text. */
const MAX_UTF8_BYTES = 0x7fff_ffff;
/** DuckDB's string_t: a 4-byte length, then up to 12 bytes inline or a 4-byte prefix and a pointer. */
const STRING_T = 16;
const INLINE = 12;

/** VARCHAR as Utf8: each value's bytes copied as DuckDB holds them (UTF-8), no string made. */
class Utf8Column implements VectorColumn {
  readonly #type: DataType;
  #offsets: Int32Array;
  readonly #data: Bytes;
  #bytes = 0;
  readonly #validity = new VectorValidity();
  #length = 0;

  constructor(type: DataType, capacity: number) {
    this.#type = type;
    this.#offsets = new Int32Array(capacity + 1);
    this.#data = new Bytes(capacity * 16);
  }

  append(vector: duckdb.Vector, from: number, n: number): boolean {
    const at = this.#length;
    const nulls = this.#validity.add(vector, at, from, n);
    const src = duckdb.vector_get_data(vector, (from + n) * STRING_T).subarray(from * STRING_T);
    const lengths = words(src, n * STRING_T);
    if (at + n + 1 > this.#offsets.length) {
      const next = new Int32Array(Math.max(this.#offsets.length * 2, at + n + 1));
      next.set(this.#offsets);
      this.#offsets = next;
    }
    const offsets = this.#offsets;
    let b = this.#bytes;
    for (let i = 0; i < n; i++) {
      if (nulls === undefined || valid(nulls, from + i)) {
        const len = lengths[i * (STRING_T >> 2)]!;
        // Past what a batch can hold: the per-value path says so about the value.
        if (b + len > MAX_UTF8_BYTES) return false;
        const data = this.#data.reserve(b + len);
        const s = i * STRING_T + 4;
        if (len <= INLINE) {
          for (let k = 0; k < len; k++) data[b + k] = src[s + k]!;
        } else {
          data.set(duckdb.get_data_from_pointer(src.buffer as ArrayBuffer, src.byteOffset + s + 4, len), b);
        }
        b += len;
      }
      offsets[at + i + 1] = b;
    }
    this.#bytes = b;
    this.#length = at + n;
    return true;
  }

  finish(): Data {
    const length = this.#length;
    return makeData({
      type: this.#type,
      length,
      valueOffsets: this.#offsets.subarray(0, length + 1),
      data: this.#data.buf.subarray(0, this.#bytes),
      ...this.#validity.take(length),
    } as never);
  }
}
