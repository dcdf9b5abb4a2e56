// Splits submitted SQL into statements so the last one can be wrapped for storage, keeping
// each statement's offset so DuckDB's error positions map back to the submitted text. It reads
// the SQL with the sandbox's tokenizer, so both agree on where strings (E'..' with backslash
// escapes and $tag$..$tag$ included), quoted names and comments begin and end.
import { tokenize } from './sqlTokens.ts';

export interface SqlStatement {
  /** The statement text without its terminating ';'. */
  text: string;
  /** Offset (UTF-16 units) of `text` in the submitted SQL. */
  start: number;
  /** When `text` is a translation (dialect/): the offset in the submitted statement of an offset in `text`. */
  sourceOffset?: (at: number) => number;
}

export function splitStatements(sql: string): SqlStatement[] {
  const out: SqlStatement[] = [];
  let start = 0;
  // Whitespace and comments yield no tokens: a statement of only those is no statement.
  let hasCode = false;
  for (const token of tokenize(sql)) {
    if (token.kind === 'punct' && token.value === ';') {
      if (hasCode) out.push({ text: sql.slice(start, token.start), start });
      start = token.end;
      hasCode = false;
    } else {
      hasCode = true;
    }
  }
  if (hasCode) out.push({ text: sql.slice(start), start });
  return out;
}
