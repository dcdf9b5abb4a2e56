import { isMap, isPair, isScalar, isSeq, type Document, type LineCounter, type Node } from 'yaml';

/** `['jobs', 0, 'outputs', 0, 'format']` -> `jobs[0].outputs[0].format` */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

export interface Position {
  readonly line: number;
  readonly col: number;
}

/**
 * Where `path` is in the source. `target: 'key'` points at the key of the last segment (for an
 * unknown field); a path that does not exist (a missing field) points at the nearest existing
 * parent, which is where the user has to add it.
 */
export function positionOf(doc: Document, lineCounter: LineCounter, path: readonly PropertyKey[], target: 'value' | 'key' = 'value'): Position | undefined {
  let node: unknown = doc.contents;
  let best: unknown = node;
  for (const [i, key] of path.entries()) {
    const last = i === path.length - 1;
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(key));
      if (!pair) break;
      if (last && target === 'key') {
        best = pair.key;
        break;
      }
      node = pair.value ?? pair.key;
    } else if (isSeq(node) && typeof key === 'number') {
      const item = node.items[key];
      if (item === undefined) break;
      node = item;
    } else {
      break;
    }
    best = node;
  }
  const range = (best as Node | null | undefined)?.range;
  if (!range) return undefined;
  return lineCounter.linePos(range[0]);
}
