import { DataType, makeVector, type Data, type RecordBatch } from 'apache-arrow';

/**
 * Reads Arrow cells from their storage, exactly: 64-bit integers, timestamps, times and durations as
 * the stored bigint (Arrow's `get()` turns timestamps into float milliseconds, losing microseconds),
 * decimals as the unscaled bigint, lists as arrays, maps as [key, value] pairs, structs as objects.
 */
export function arrowRows(batch: RecordBatch): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (let i = 0; i < batch.numRows; i++) {
    const row: Record<string, unknown> = {};
    batch.schema.fields.forEach((f, c) => {
      row[f.name] = cell(batch.data.children[c]!, i);
    });
    out.push(row);
  }
  return out;
}

export function cell(data: Data, index: number): unknown {
  const at = data.offset + index;
  const bitmap = data.nullBitmap;
  if (bitmap !== undefined && bitmap.length > 0 && (bitmap[at >> 3]! & (1 << (at & 7))) === 0) return null;
  const t = data.type;
  if ((DataType.isInt(t) && t.bitWidth === 64) || DataType.isTimestamp(t) || DataType.isTime(t) || DataType.isDuration(t)) {
    return (data.values as BigInt64Array)[at];
  }
  if (DataType.isDate(t)) return (data.values as Int32Array)[at];
  if (DataType.isDecimal(t)) {
    const words = t.bitWidth / 32;
    const w = (data.values as Uint32Array).subarray(at * words, (at + 1) * words);
    let v = 0n;
    for (let k = words - 1; k >= 0; k--) v = (v << 32n) | BigInt(w[k]!);
    return BigInt.asIntN(t.bitWidth, v);
  }
  if (DataType.isList(t) || DataType.isMap(t)) {
    const offsets = data.valueOffsets as Int32Array;
    const child = data.children[0]!;
    const items: unknown[] = [];
    for (let j = offsets[at]!; j < offsets[at + 1]!; j++) {
      items.push(DataType.isMap(t) ? [cell(child.children[0]!, j), cell(child.children[1]!, j)] : cell(child, j));
    }
    return items;
  }
  if (DataType.isStruct(t)) {
    return Object.fromEntries(t.children.map((f, k) => [f.name, cell(data.children[k]!, index)]));
  }
  return makeVector(data).get(index);
}
