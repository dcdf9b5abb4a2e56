// Which encoding each column gets. The writer can only be told per top-level column (nested
// leaves follow the global setting), so only those are chosen here. "auto" does not guess from
// the type: it writes a sample of the data once per candidate and keeps, per column, the encoding
// whose compressed bytes were fewest. Sorted ids and times then get DELTA_BINARY_PACKED (thousands
// of times smaller than plain), low-cardinality columns a dictionary, and unique hashes plain or
// DELTA_BYTE_ARRAY, without a rule for each shape of data.
import { type Data, DataType, IntervalUnit, RecordBatch, type Schema, Table, tableToIPC } from 'apache-arrow';
import type * as Wasm from 'parquet-wasm';

export const ENCODINGS = ['plain', 'delta_binary_packed', 'delta_length_byte_array', 'delta_byte_array', 'byte_stream_split'] as const;
export type EncodingName = (typeof ENCODINGS)[number];
/** A column's choice: a dictionary (falling back to plain when it overflows) or one encoding. */
export type Choice = 'dictionary' | EncodingName;

/** Names of parquet-wasm's Encoding members (the module itself is loaded by the first encode). */
export const WASM_ENCODING = {
  plain: 'PLAIN',
  delta_binary_packed: 'DELTA_BINARY_PACKED',
  delta_length_byte_array: 'DELTA_LENGTH_BYTE_ARRAY',
  delta_byte_array: 'DELTA_BYTE_ARRAY',
  byte_stream_split: 'BYTE_STREAM_SPLIT',
} as const satisfies Record<EncodingName, keyof typeof Wasm.Encoding>;

/** The Parquet physical type family an Arrow type is written as (arrow-rs' mapping). */
export type Physical = 'boolean' | 'integer' | 'float' | 'bytes' | 'fixed' | 'nested';

export function physicalOf(type: DataType): Physical {
  if (DataType.isBool(type)) return 'boolean';
  if (DataType.isInt(type) || DataType.isDate(type) || DataType.isTime(type) || DataType.isTimestamp(type) || DataType.isDuration(type)) return 'integer';
  // Decimals of up to 18 digits are stored as INT32/INT64, wider ones as fixed-length bytes.
  if (DataType.isDecimal(type)) return type.precision <= 18 ? 'integer' : 'fixed';
  if (DataType.isFloat(type)) return type.precision === 0 ? 'fixed' : 'float';
  if (DataType.isUtf8(type) || DataType.isLargeUtf8(type) || DataType.isBinary(type) || DataType.isLargeBinary(type)) return 'bytes';
  if (DataType.isDictionary(type)) return physicalOf(type.dictionary);
  if (DataType.isFixedSizeBinary(type) || DataType.isInterval(type)) return 'fixed';
  return 'nested';
}

/** Encodings (besides plain and a dictionary) the writer accepts for a physical type. */
export const ALLOWED: Record<Physical, readonly EncodingName[]> = {
  boolean: ['plain'],
  integer: ['plain', 'delta_binary_packed'],
  float: ['plain', 'byte_stream_split'],
  bytes: ['plain', 'delta_length_byte_array', 'delta_byte_array'],
  fixed: ['plain'],
  nested: [],
};

/** What "auto" tries per physical type, in order of preference when sizes tie. */
const CANDIDATES: Record<Physical, readonly Choice[]> = {
  boolean: [],
  integer: ['plain', 'delta_binary_packed', 'dictionary'],
  float: ['plain', 'byte_stream_split', 'dictionary'],
  bytes: ['plain', 'dictionary', 'delta_byte_array', 'delta_length_byte_array'],
  fixed: ['plain', 'dictionary'],
  nested: [],
};

/** Sets one top-level column's encoding on the builder. */
export function applyChoice(wasm: typeof Wasm, builder: Wasm.WriterPropertiesBuilder, column: string, choice: Choice): Wasm.WriterPropertiesBuilder {
  if (choice === 'dictionary') return builder.setColumnDictionaryEnabled(column, true).setColumnEncoding(column, wasm.Encoding.PLAIN);
  return builder.setColumnDictionaryEnabled(column, false).setColumnEncoding(column, wasm.Encoding[WASM_ENCODING[choice]]);
}

/**
 * Writes `sample` once per round of candidates (round r holds the columns that have an r-th
 * candidate, each with it) with the file's own codec, reads back each column chunk's compressed
 * size, and returns the smallest choice per column. Columns without candidates (booleans,
 * nested) are absent.
 *
 * A sample is smaller than a row group, so it under-rates a dictionary for values that repeat
 * only across a whole group (20,000 addresses in 122,880 rows look nearly unique in 16,384). The
 * dictionary's size at the row group's scale is therefore also estimated from the sample: its
 * distinct count extrapolated (Chao1), each entry costing what a plain value cost in the trial,
 * plus a bit-packed index per row. The dictionary is taken when either its trial or its estimate
 * beats every other encoding, and only while it fits the writer's dictionary page: one that
 * would overflow (the writer then falls back to plain in the middle of a group) is not tried.
 */
export async function chooseEncodings(
  wasm: typeof Wasm,
  schema: Schema,
  sample: readonly RecordBatch[],
  columns: readonly string[],
  compression: Wasm.Compression,
  rowGroupRows: number,
  allowed: ReadonlySet<string> = new Set(['dictionary', ...ENCODINGS]),
): Promise<Map<string, Choice>> {
  const chosen = new Map<string, Choice>();
  const rows = sample.reduce((n, b) => n + b.numRows, 0);
  const tried = columns
    .map((name) => ({ name, index: schema.fields.findIndex((f) => f.name === name) }))
    .map((c) => {
      const candidates = CANDIDATES[physicalOf(schema.fields[c.index]!.type)].filter((x) => allowed.has(x));
      const stats = rows > 0 && candidates.includes('dictionary') ? dictionaryStats(sample, c.index, rows, rowGroupRows) : undefined;
      return { ...c, stats, candidates: stats?.fits === false ? candidates.filter((x) => x !== 'dictionary') : candidates };
    })
    .filter((c) => {
      if (c.candidates.length === 1) chosen.set(c.name, c.candidates[0]!);
      return c.candidates.length > 1;
    });
  if (tried.length === 0 || rows === 0) return chosen;
  const table = new Table(sample.map((b) => new RecordBatch(schema, b.data)));
  const sizes = new Map<string, Map<Choice, number>>(tried.map((c) => [c.name, new Map()]));
  const rounds = Math.max(...tried.map((c) => c.candidates.length));
  for (let round = 0; round < rounds; round++) {
    const inRound = tried.filter((c) => round < c.candidates.length);
    let builder = new wasm.WriterPropertiesBuilder().setCompression(compression).setMaxRowGroupSize(Number.MAX_SAFE_INTEGER);
    for (const c of inRound) builder = applyChoice(wasm, builder, c.name, c.candidates[round]!);
    const ipc = tableToIPC(table.select(inRound.map((c) => c.name)), 'stream');
    const written = await columnSizes(wasm, wasm.writeParquet(wasm.Table.fromIPCStream(ipc), builder.build()));
    for (const c of inRound) sizes.get(c.name)!.set(c.candidates[round]!, written.get(c.name) ?? Number.POSITIVE_INFINITY);
  }
  for (const c of tried) {
    const measured = sizes.get(c.name)!;
    if (measured.has('dictionary') && c.stats !== undefined && c.stats.values > 0) {
      const estimate = dictionaryEstimate(c.stats, rows, rowGroupRows, measured.get('plain') ?? Number.POSITIVE_INFINITY);
      measured.set('dictionary', Math.min(measured.get('dictionary')!, estimate));
    }
    let best: Choice | undefined;
    for (const choice of c.candidates) if (best === undefined || measured.get(choice)! < measured.get(best)!) best = choice;
    chosen.set(c.name, best!);
  }
  return chosen;
}

/** The writer's default dictionary page limit: beyond it a dictionary falls back to plain. */
const DICTIONARY_PAGE_BYTES = 1_048_576;

/** What the sample says of a column's dictionary in a row group of `groupRows`. */
interface DictionaryStats {
  /** Non-null values in the sample. */
  values: number;
  /** Non-null values and distinct values expected in a row group. */
  groupValues: number;
  groupDistinct: number;
  /** Whether that dictionary fits the writer's dictionary page. */
  fits: boolean;
}

function dictionaryStats(sample: readonly RecordBatch[], index: number, rows: number, groupRows: number): DictionaryStats {
  const { values, rawBytes, distinct: seen, once, twice } = countValues(sample, index, rows);
  if (values === 0) return { values, groupValues: 0, groupDistinct: 0, fits: true };
  const distinct = seen + (once * (once - 1)) / (2 * (twice + 1));
  const groupValues = (groupRows * values) / rows;
  const groupDistinct = distinct * -Math.expm1(-groupValues / distinct);
  return { values, groupValues, groupDistinct, fits: groupDistinct * (rawBytes / values) <= DICTIONARY_PAGE_BYTES };
}

/** The non-null values of column `index` in `sample`: how many, their bytes, how many distinct, seen once, seen twice. */
export function countValues(sample: readonly RecordBatch[], index: number, rows: number): { values: number; rawBytes: number; distinct: number; once: number; twice: number } {
  const counts = new WordCounts(rows);
  let rawBytes = 0;
  let values = 0;
  for (const batch of sample) {
    for (const data of batch.getChildAt(index)!.data) {
      const read = valueKey(data);
      for (let i = 0; i < data.length; i++) {
        if (!data.getValid(i)) continue;
        rawBytes += read(i, counts);
        values++;
      }
    }
  }
  return { values, rawBytes, ...counts.tally() };
}

/**
 * Occurrences of values given as two 32-bit words each (the value's bits, or a 64-bit hash of its
 * bytes), in an open-addressing table of typed arrays: no Map entry, boxed number or bigint per
 * value (measured: a Map over a 16,384-row sample of `sample.events` took about 15% of an export).
 */
class WordCounts {
  #keys: Uint32Array;
  #counts: Int32Array;
  #size = 0;

  constructor(expected: number) {
    let capacity = 16;
    while (capacity < expected * 2) capacity *= 2;
    this.#keys = new Uint32Array(capacity * 2);
    this.#counts = new Int32Array(capacity);
  }

  add(lo: number, hi: number): void {
    const slot = this.#slot(lo, hi);
    if (this.#counts[slot] === 0) {
      this.#keys[2 * slot] = lo;
      this.#keys[2 * slot + 1] = hi;
      this.#size++;
    }
    this.#counts[slot]!++;
    if (this.#size * 2 > this.#counts.length) this.#grow();
  }

  tally(): { distinct: number; once: number; twice: number } {
    let once = 0;
    let twice = 0;
    for (const n of this.#counts) {
      if (n === 1) once++;
      else if (n === 2) twice++;
    }
    return { distinct: this.#size, once, twice };
  }

  /** The slot holding the value (lo, hi), or the empty slot where it goes. */
  #slot(lo: number, hi: number): number {
    const keys = this.#keys;
    const counts = this.#counts;
    const mask = counts.length - 1;
    let slot = (Math.imul(lo ^ Math.imul(hi, 0x9e3779b1), 0x85ebca6b) >>> 7) & mask;
    while (counts[slot] !== 0 && (keys[2 * slot] !== lo >>> 0 || keys[2 * slot + 1] !== hi >>> 0)) slot = (slot + 1) & mask;
    return slot;
  }

  #grow(): void {
    const keys = this.#keys;
    const counts = this.#counts;
    this.#keys = new Uint32Array(keys.length * 2);
    this.#counts = new Int32Array(counts.length * 2);
    for (let old = 0; old < counts.length; old++) {
      if (counts[old] === 0) continue;
      const slot = this.#slot(keys[2 * old]!, keys[2 * old + 1]!);
      this.#keys[2 * slot] = keys[2 * old]!;
      this.#keys[2 * slot + 1] = keys[2 * old + 1]!;
      this.#counts[slot] = counts[old]!;
    }
  }
}

/**
 * A dictionary's compressed size for a row group of `groupRows`, scaled back to the sample's
 * `rows` so it compares with the trial sizes.
 */
function dictionaryEstimate(stats: DictionaryStats, rows: number, groupRows: number, plainBytes: number): number {
  const entryBytes = plainBytes / stats.values;
  const indexBytes = Math.ceil(Math.log2(Math.max(2, stats.groupDistinct))) / 8;
  const groupBytes = stats.groupDistinct * entryBytes + stats.groupValues * indexBytes;
  return (groupBytes * rows) / groupRows;
}

/**
 * Counts each value of a column into `counts` (as two 32-bit words) and returns its size in bytes,
 * reading the buffers: `Vector.get` would turn int64 timestamps into numbers (and throw beyond 2^53)
 * and decimals into objects. Values of 1, 2, 4 or 8 bytes count by their bits; others (strings,
 * bytes, decimals of 16 or 32 bytes) by a 64-bit hash of their bytes: a collision only nudges an
 * estimate. Floats count by their bits, so -0 and 0 (or two NaNs) are two values, as a dictionary
 * that compares bits would keep them.
 */
function valueKey(data: Data): (i: number, counts: WordCounts) => number {
  if (DataType.isUtf8(data.type) || DataType.isLargeUtf8(data.type) || DataType.isBinary(data.type) || DataType.isLargeBinary(data.type)) {
    const offsets = data.valueOffsets as ArrayLike<number | bigint>;
    const bytes = data.values as Uint8Array;
    return (i, counts) => {
      const start = Number(offsets[i]);
      const end = Number(offsets[i + 1]);
      countBytes(counts, bytes, start, end);
      return end - start;
    };
  }
  const values = data.values as ArrayLike<number | bigint> & { BYTES_PER_ELEMENT: number; buffer: ArrayBufferLike; byteOffset: number; byteLength: number };
  const elements = elementsPerValue(data.type);
  const width = elements * values.BYTES_PER_ELEMENT;
  if (elements === 1 && width < 4) {
    // Int8/16, Uint8/16, Float16: the element's bits as one word.
    const view = values as ArrayLike<number>;
    const mask = width === 1 ? 0xff : 0xffff;
    return (i, counts) => {
      counts.add(view[i]! & mask, 0);
      return width;
    };
  }
  if ((width === 4 || width === 8) && values.byteOffset % 4 === 0) {
    const words = new Uint32Array(values.buffer, values.byteOffset, values.byteLength >> 2);
    if (width === 4) {
      return (i, counts) => {
        counts.add(words[i]!, 0);
        return width;
      };
    }
    return (i, counts) => {
      counts.add(words[2 * i]!, words[2 * i + 1]!);
      return width;
    };
  }
  const bytes = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  return (i, counts) => {
    countBytes(counts, bytes, i * width, (i + 1) * width);
    return width;
  };
}

/**
 * Elements of a column's values array per value: from the type, not from the array's length, which
 * can run past the values (a builder's spare capacity, IPC padding).
 */
function elementsPerValue(type: DataType): number {
  if (DataType.isDecimal(type)) return type.bitWidth / 32;
  if (DataType.isFixedSizeBinary(type)) return type.byteWidth;
  if (DataType.isInterval(type)) return type.unit === IntervalUnit.YEAR_MONTH ? 1 : type.unit === IntervalUnit.DAY_TIME ? 2 : 4;
  return 1;
}

/** Counts `bytes[start..end)` by two 32-bit hashes of them (FNV-1a and a multiplicative one). */
function countBytes(counts: WordCounts, bytes: Uint8Array, start: number, end: number): void {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ (end - start);
  for (let k = start; k < end; k++) {
    a = Math.imul(a ^ bytes[k]!, 0x01000193);
    b = Math.imul(b ^ bytes[k]!, 0x5bd1e995);
  }
  counts.add(a, b);
}

/** Compressed bytes per top-level column of a Parquet file, from its footer. */
async function columnSizes(wasm: typeof Wasm, file: Uint8Array): Promise<Map<string, number>> {
  const parquet = await wasm.ParquetFile.fromFile(new Blob([file as Uint8Array<ArrayBuffer>]));
  const sizes = new Map<string, number>();
  try {
    const meta = parquet.metadata();
    for (const group of meta.rowGroups()) {
      for (const chunk of group.columns()) {
        const top = chunk.columnPath()[0]!;
        sizes.set(top, (sizes.get(top) ?? 0) + chunk.compressedSize());
        chunk.free();
      }
      group.free();
    }
    meta.free();
  } finally {
    parquet.free();
  }
  return sizes;
}
