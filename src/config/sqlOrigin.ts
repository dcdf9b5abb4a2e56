// Where each job's `source.sql` text sits in its job file, so that an SQL error's line and column
// (counted in the SQL the service received) can be shown as the file's FILE:LINE:COL, which
// editors and CI annotations open at the right place.
import { isScalar, Scalar, type Document, type LineCounter } from 'yaml';

/** How a line and column of a job's SQL text map back to its job file. */
interface SqlOrigin {
  readonly file: string;
  /** The file line of the SQL's first line. */
  readonly line: number;
  /** The file column of the SQL's first character on each line (block scalars: their indent + 1). */
  readonly col: number;
  /** Block scalars keep lines one for one; a quoted or plain scalar maps only when on one line. */
  readonly block: boolean;
}

const origins = new WeakMap<object, SqlOrigin>();

/**
 * Records where `source.sql` of each job is written. `sources[i]` is job i's parsed source object;
 * the mapping is exact for `|` block scalars and single-line scalars without escapes before the
 * position, and is not made for folded (`>`) scalars, whose lines the YAML parser joins.
 */
export function recordSqlOrigins(doc: Document, lineCounter: LineCounter, text: string, file: string, sources: readonly unknown[]): void {
  for (const [i, source] of sources.entries()) {
    if (typeof source !== 'object' || source === null || !('sql' in source)) continue;
    const node = doc.getIn(['jobs', i, 'source', 'sql'], true);
    if (!isScalar(node) || node.range === undefined || node.range === null) continue;
    const origin = originOf(node, lineCounter, text, file);
    if (origin !== undefined) origins.set(source, origin);
  }
}

function originOf(node: Scalar, lineCounter: LineCounter, text: string, file: string): SqlOrigin | undefined {
  const [start, valueEnd] = node.range!;
  const at = lineCounter.linePos(start);
  if (node.type === Scalar.BLOCK_LITERAL) {
    // The header (`|`, `|-`, `|2`) ends its line; the content starts on the next with its indent.
    if (text.slice(start, valueEnd).includes('${')) return undefined;
    const contentStart = text.indexOf('\n', start) + 1;
    if (contentStart === 0) return undefined;
    const firstLine = text.slice(contentStart, text.indexOf('\n', contentStart) === -1 ? undefined : text.indexOf('\n', contentStart));
    const indent = /^ */.exec(firstLine)![0].length;
    return { file, line: at.line + 1, col: indent + 1, block: true };
  }
  if (node.type === Scalar.BLOCK_FOLDED) return undefined;
  // Escapes and ${VAR} make the value's columns differ from the file's: no mapping then.
  const raw = text.slice(start, valueEnd);
  if (raw.includes('${') || (node.type === Scalar.QUOTE_DOUBLE && raw.includes('\\')) || (node.type === Scalar.QUOTE_SINGLE && raw.slice(1, -1).includes("''"))) return undefined;
  if (lineCounter.linePos(valueEnd).line !== at.line) return undefined;
  const quoted = node.type === Scalar.QUOTE_DOUBLE || node.type === Scalar.QUOTE_SINGLE;
  return { file, line: at.line, col: at.col + (quoted ? 1 : 0), block: false };
}

/**
 * `FILE:LINE:COL` of an SQL position (1-based line and column of the SQL text) of the job whose
 * source this is, or undefined when the file position cannot be told.
 */
export function sqlFilePosition(source: object, line: number | undefined, column: number | undefined): string | undefined {
  const origin = origins.get(source);
  if (origin === undefined || line === undefined || column === undefined || line < 1 || column < 1) return undefined;
  if (!origin.block) return line === 1 ? `${origin.file}:${origin.line}:${origin.col + column - 1}` : undefined;
  return `${origin.file}:${origin.line + line - 1}:${origin.col + column - 1}`;
}
