// Turns a DuckDB error (errors_as_json) into an EngineError whose message and line:column
// point into the SQL the user submitted, not into the wrapper text DuckDB actually ran.
import { EngineError, type EngineErrorKind } from './types.ts';
import { lineColumnAt, utf16IndexOf } from './sandbox/sqlPosition.ts';

interface DuckDbErrorInfo {
  type: string;
  message: string;
  position?: number;
}

export function parseDuckDbError(err: unknown): DuckDbErrorInfo {
  const raw = err instanceof Error ? err.message : String(err);
  const start = raw.indexOf('{"exception_type"');
  if (start >= 0) {
    try {
      const parsed: unknown = JSON.parse(raw.slice(start));
      if (parsed && typeof parsed === 'object') {
        const rec = parsed as Record<string, unknown>;
        const type = typeof rec['exception_type'] === 'string' ? rec['exception_type'] : 'Unknown';
        const message = typeof rec['exception_message'] === 'string' ? rec['exception_message'] : raw;
        const pos = Number(rec['position']);
        return Number.isInteger(pos) && pos >= 0 ? { type, message, position: pos } : { type, message };
      }
    } catch {
      // not JSON after all: fall through to the plain text form
    }
  }
  const m = /^([A-Za-z ]+?) Error: ([\s\S]*)$/.exec(raw);
  return m ? { type: m[1]!, message: m[2]! } : { type: 'Unknown', message: raw };
}

function kindOf(type: string): EngineErrorKind {
  switch (type.toLowerCase()) {
    case 'parser':
    case 'syntax':
      return 'syntax';
    case 'binder':
    case 'catalog':
    case 'dependency':
    case 'not implemented':
      return 'semantic';
    case 'out of memory':
      return 'capacity';
    case 'interrupt':
      return 'canceled';
    default:
      return 'internal';
  }
}

/** Where the text DuckDB ran came from: `ran` holds the user's statement at `prefixLength`. */
export interface SqlOrigin {
  sql: string;
  statementStart: number;
  ran: string;
  prefixLength: number;
  statementLength: number;
  /** Maps an offset in the statement as run to the user's statement when it was translated (dialect/). */
  sourceOffset?: (at: number) => number;
}

export function toEngineError(err: unknown, origin?: SqlOrigin): EngineError {
  if (err instanceof EngineError) return err;
  const info = parseDuckDbError(err);
  const kind = kindOf(info.type);
  if (info.position === undefined || origin === undefined) {
    return new EngineError(kind, info.message, { cause: err });
  }
  // Parser errors count code points, binder/catalog errors UTF-8 bytes (DuckDB 1.5.6).
  const unit = kind === 'syntax' ? 'codepoint' : 'byte';
  const inRan = utf16IndexOf(origin.ran, info.position, unit);
  const inRun = Math.max(inRan - origin.prefixLength, 0);
  const inStatement = origin.sourceOffset ? origin.sourceOffset(inRun) : Math.min(inRun, origin.statementLength);
  const { line, column } = lineColumnAt(origin.sql, origin.statementStart + inStatement);
  return new EngineError(kind, `line ${line}:${column}: ${info.message}`, { line, column, cause: err });
}
