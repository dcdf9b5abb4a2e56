// Gathers rows of Arrow data by index into new, compact buffers (apache-arrow has no `take`).
// A sliced Data keeps its offset, but apache-arrow has already sliced its offsets, values and
// children by it: only bit buffers (validity, booleans) are still indexed from `offset`.
// Partitioning needs it: rows of one partition are scattered through a batch, and zero-copy
// slices of single rows would make one tiny write (or file) per row.
import { type Data, DataType, makeData, Type } from 'apache-arrow';

/** A copy of `data` holding only the rows at `indices` (in that order). */
export function takeRows(data: Data, indices: Int32Array): Data {
  const n = indices.length;
  const type = data.type as DataType;
  const nullBitmap = data.nullCount > 0 ? takeBits(data.nullBitmap, data.offset, indices) : undefined;
  const nullCount = nullBitmap ? n - countBits(nullBitmap, n) : 0;
  const base = { type, length: n, nullCount, nullBitmap } as const;
  switch (type.typeId) {
    case Type.Null:
      return makeData({ type, length: n, nullCount: n } as never);
    case Type.Bool:
      return makeData({ ...base, data: takeBits(data.values as Uint8Array, data.offset, indices) } as never);
    case Type.Utf8:
    case Type.Binary:
    case Type.LargeUtf8:
    case Type.LargeBinary:
      return takeVariable(data, indices, base);
    case Type.List:
    case Type.Map:
      return takeList(data, indices, base);
    case Type.Struct:
      return makeData({ ...base, children: data.children.map((c) => takeRows(c, indices)) } as never);
    case Type.FixedSizeList: {
      const size = (type as unknown as { listSize: number }).listSize;
      const child = data.children[0]!;
      const inner = new Int32Array(n * size);
      for (let i = 0; i < n; i++) for (let j = 0; j < size; j++) inner[i * size + j] = indices[i]! * size + j;
      return makeData({ ...base, child: takeRows(child, inner) } as never);
    }
    case Type.Dictionary:
      return makeData({ ...base, data: takeFixed(data.values, 1, indices), dictionary: data.dictionary } as never);
    default:
      if (DataType.isUnion(type) || data.children.length > 0) throw new Error(`cannot regroup rows of ${String(type)}`);
      return makeData({ ...base, data: takeFixed(data.values, data.stride, indices) } as never);
  }
}

type ArrayLikeCtor = { new (length: number): ArrayLike<number | bigint> & { [i: number]: number | bigint } };

function takeFixed<T extends ArrayLike<unknown>>(values: T, stride: number, indices: Int32Array): T {
  const out = new (values.constructor as unknown as ArrayLikeCtor)(indices.length * stride);
  const src = values as unknown as ArrayLike<number | bigint>;
  if (stride === 1) {
    for (let i = 0; i < indices.length; i++) out[i] = src[indices[i]!]!;
  } else {
    for (let i = 0; i < indices.length; i++) {
      const from = indices[i]! * stride;
      for (let j = 0; j < stride; j++) out[i * stride + j] = src[from + j]!;
    }
  }
  return out as unknown as T;
}

function takeBits(bitmap: Uint8Array, offset: number, indices: Int32Array): Uint8Array {
  const out = new Uint8Array(((indices.length + 63) & ~63) >> 3);
  for (let i = 0; i < indices.length; i++) {
    const bit = offset + indices[i]!;
    if ((bitmap[bit >> 3]! >> (bit & 7)) & 1) out[i >> 3]! |= 1 << (i & 7);
  }
  return out;
}

function countBits(bitmap: Uint8Array, length: number): number {
  let set = 0;
  for (let i = 0; i < length; i++) set += (bitmap[i >> 3]! >> (i & 7)) & 1;
  return set;
}

function takeVariable(data: Data, indices: Int32Array, base: object): Data {
  const offsets = data.valueOffsets as Int32Array | BigInt64Array;
  const bytes = data.values as Uint8Array;
  const large = offsets instanceof BigInt64Array;
  const at = (i: number) => Number(offsets[i]!);
  let total = 0;
  for (let i = 0; i < indices.length; i++) total += at(indices[i]! + 1) - at(indices[i]!);
  const outBytes = new Uint8Array(total);
  const outOffsets = large ? new BigInt64Array(indices.length + 1) : new Int32Array(indices.length + 1);
  let end = 0;
  for (let i = 0; i < indices.length; i++) {
    const from = at(indices[i]!);
    const to = at(indices[i]! + 1);
    outBytes.set(bytes.subarray(from, to), end);
    end += to - from;
    outOffsets[i + 1] = (large ? BigInt(end) : end) as never;
  }
  return makeData({ ...base, data: outBytes, valueOffsets: outOffsets } as never);
}

function takeList(data: Data, indices: Int32Array, base: object): Data {
  const offsets = data.valueOffsets as Int32Array;
  const inner: number[] = [];
  const outOffsets = new Int32Array(indices.length + 1);
  for (let i = 0; i < indices.length; i++) {
    const from = offsets[indices[i]!]!;
    const to = offsets[indices[i]! + 1]!;
    for (let j = from; j < to; j++) inner.push(j);
    outOffsets[i + 1] = outOffsets[i]! + (to - from);
  }
  return makeData({ ...base, valueOffsets: outOffsets, child: takeRows(data.children[0]!, Int32Array.from(inner)) } as never);
}
