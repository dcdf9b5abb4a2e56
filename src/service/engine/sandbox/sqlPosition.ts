// DuckDB reports error positions inconsistently: parser errors count code points, binder and
// catalog errors count UTF-8 bytes (measured on DuckDB 1.5.6). Both are 0-based offsets into
// the text DuckDB was given; these helpers turn them into 1-based line:column of the text the
// user submitted (columns counted in code points, CRLF and lone CR end a line).

export type PositionUnit = 'codepoint' | 'byte';

/** UTF-16 index of a 0-based DuckDB position in `text`. */
export function utf16IndexOf(text: string, position: number, unit: PositionUnit): number {
  let counted = 0;
  let i = 0;
  while (i < text.length && counted < position) {
    const cp = text.codePointAt(i) ?? 0;
    counted += unit === 'codepoint' ? 1 : utf8Length(cp);
    i += cp > 0xffff ? 2 : 1;
  }
  return i;
}

function utf8Length(cp: number): number {
  if (cp < 0x80) return 1;
  if (cp < 0x800) return 2;
  if (cp < 0x10000) return 3;
  return 4;
}

/** 1-based line and column (code points) of a UTF-16 index. */
export function lineColumnAt(text: string, index: number): { line: number; column: number } {
  let line = 1;
  let column = 1;
  let i = 0;
  const end = Math.min(index, text.length);
  while (i < end) {
    const ch = text.charCodeAt(i);
    if (ch === 0x0a || (ch === 0x0d && text.charCodeAt(i + 1) !== 0x0a)) {
      line += 1;
      column = 1;
      i += 1;
    } else if (ch === 0x0d) {
      i += 1; // the '\n' of a CRLF ends the line
    } else {
      const cp = text.codePointAt(i) ?? 0;
      column += 1;
      i += cp > 0xffff ? 2 : 1;
    }
  }
  return { line, column };
}
