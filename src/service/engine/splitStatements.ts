// Splits submitted SQL into statements so the last one can be wrapped for storage, keeping
// each statement's offset so DuckDB's error positions map back to the submitted text.

export interface SqlStatement {
  /** The statement text without its terminating ';'. */
  text: string;
  /** Offset (UTF-16 units) of `text` in the submitted SQL. */
  start: number;
}

export function splitStatements(sql: string): SqlStatement[] {
  const out: SqlStatement[] = [];
  let start = 0;
  let i = 0;
  const push = (end: number): void => {
    const text = sql.slice(start, end);
    if (hasCode(text)) out.push({ text, start });
  };
  while (i < sql.length) {
    const ch = sql[i];
    const next = sql[i + 1];
    if (ch === "'" || ch === '"') {
      i = skipQuoted(sql, i, ch);
    } else if (ch === '-' && next === '-') {
      const nl = sql.indexOf('\n', i);
      i = nl < 0 ? sql.length : nl + 1;
    } else if (ch === '/' && next === '*') {
      const close = sql.indexOf('*/', i + 2);
      i = close < 0 ? sql.length : close + 2;
    } else if (ch === '$') {
      const tag = /^\$[A-Za-z_0-9]*\$/.exec(sql.slice(i, i + 64));
      if (tag && !/[A-Za-z_0-9]/.test(sql[i - 1] ?? '')) {
        const close = sql.indexOf(tag[0], i + tag[0].length);
        i = close < 0 ? sql.length : close + tag[0].length;
      } else {
        i += 1;
      }
    } else if (ch === ';') {
      push(i);
      start = i + 1;
      i += 1;
    } else {
      i += 1;
    }
  }
  push(sql.length);
  return out;
}

function skipQuoted(sql: string, i: number, quote: string): number {
  let j = i + 1;
  while (j < sql.length) {
    if (sql[j] === quote) {
      if (sql[j + 1] === quote) j += 2;
      else return j + 1;
    } else {
      j += 1;
    }
  }
  return sql.length;
}

/** True when the text holds something other than whitespace and comments. */
function hasCode(text: string): boolean {
  const stripped = text.replace(/--[^\n]*(\n|$)/g, ' ').replace(/\/\*[\s\S]*?(\*\/|$)/g, ' ');
  return stripped.trim().length > 0;
}
