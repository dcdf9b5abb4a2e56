// A small SQL tokenizer for the few statement shapes the sandbox must read before DuckDB binds
// them (binding already has effects: read_csv sniffs its file while binding). It only needs to
// find words, names, strings and parentheses; everything it does not know is a one-character
// 'punct' token, so an odd statement is denied rather than misread.

export interface SqlToken {
  kind: 'word' | 'quoted' | 'string' | 'punct';
  /** word: lowercased; quoted: the identifier without quotes; string: the literal's value. */
  value: string;
  /** UTF-16 offsets in the tokenized text. */
  start: number;
  end: number;
}

const WORD = /[A-Za-z_0-9$\u0080-\uffff]+/y;

export function tokenize(text: string): SqlToken[] {
  const out: SqlToken[] = [];
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    const next = text[i + 1];
    if (/\s/.test(ch)) {
      i += 1;
    } else if (ch === '-' && next === '-') {
      const nl = text.indexOf('\n', i);
      i = nl < 0 ? text.length : nl + 1;
    } else if (ch === '/' && next === '*') {
      const close = text.indexOf('*/', i + 2);
      i = close < 0 ? text.length : close + 2;
    } else if (ch === "'" || ((ch === 'e' || ch === 'E') && next === "'")) {
      const open = ch === "'" ? i : i + 1;
      const end = closeQuote(text, open, "'", open !== i);
      out.push({ kind: 'string', value: unquote(text.slice(open + 1, end - 1), "'", open !== i), start: i, end });
      i = end;
    } else if (ch === '"') {
      const end = closeQuote(text, i, '"', false);
      out.push({ kind: 'quoted', value: unquote(text.slice(i + 1, end - 1), '"', false), start: i, end });
      i = end;
    } else if (ch === '$' && /^\$[A-Za-z_0-9]*\$/.test(text.slice(i, i + 64))) {
      const tag = /^\$[A-Za-z_0-9]*\$/.exec(text.slice(i, i + 64))![0];
      const close = text.indexOf(tag, i + tag.length);
      const end = close < 0 ? text.length : close + tag.length;
      out.push({ kind: 'string', value: text.slice(i + tag.length, close < 0 ? end : close), start: i, end });
      i = end;
    } else if (/[A-Za-z_0-9\u0080-\uffff]/.test(ch)) {
      // Sticky, from i: slicing the rest of the text for every word would be quadratic in its length.
      WORD.lastIndex = i;
      const m = WORD.exec(text)!;
      out.push({ kind: 'word', value: m[0].toLowerCase(), start: i, end: i + m[0].length });
      i += m[0].length;
    } else {
      out.push({ kind: 'punct', value: ch, start: i, end: i + 1 });
      i += 1;
    }
  }
  return out;
}

function closeQuote(text: string, open: number, quote: string, backslashes: boolean): number {
  let j = open + 1;
  while (j < text.length) {
    if (backslashes && text[j] === '\\') j += 2;
    else if (text[j] === quote && text[j + 1] === quote) j += 2;
    else if (text[j] === quote) return j + 1;
    else j += 1;
  }
  return text.length;
}

function unquote(body: string, quote: string, backslashes: boolean): string {
  const doubled = body.replaceAll(quote + quote, quote);
  return backslashes ? doubled.replace(/\\(.)/g, '$1') : doubled;
}

/** A dotted name read at `at`: its parts (lowercase unless quoted) and the index after it. */
export function readName(tokens: SqlToken[], at: number): { parts: string[]; next: number } | undefined {
  const parts: string[] = [];
  let i = at;
  for (;;) {
    const t = tokens[i];
    if (!t || (t.kind !== 'word' && t.kind !== 'quoted')) return undefined;
    parts.push(t.value);
    i += 1;
    if (tokens[i]?.kind === 'punct' && tokens[i]!.value === '.') i += 1;
    else return { parts, next: i };
  }
}

/** Index after the parenthesized group opening at `at` (which must be '('). */
export function skipParens(tokens: SqlToken[], at: number): number {
  let depth = 0;
  for (let i = at; i < tokens.length; i += 1) {
    const t = tokens[i]!;
    if (t.kind !== 'punct') continue;
    if (t.value === '(') depth += 1;
    else if (t.value === ')') {
      depth -= 1;
      if (depth === 0) return i + 1;
    }
  }
  return tokens.length;
}

/** The parts of a table name written as a string, as in `PRAGMA table_info('sample.events')`. */
export function splitNameText(text: string): string[] {
  const tokens = tokenize(text);
  const name = readName(tokens, 0);
  return name && name.next === tokens.length ? name.parts : [text];
}
