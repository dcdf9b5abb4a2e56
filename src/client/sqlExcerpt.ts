/**
 * The offending line of SQL with a caret under the column (both 1-based, the column counted in code
 * points as the service counts it):
 *
 *     2 | SELECT * FORM t
 *       |          ^
 *
 * Undefined when the position is missing or outside the text. Tabs are repeated in the caret line so
 * the caret stays under the character whatever the tab width.
 */
export function sqlExcerpt(sql: string, line: number | undefined, column: number | undefined): string | undefined {
  if (line === undefined || column === undefined || line < 1 || column < 1) return undefined;
  const text = sql.split(/\r?\n/)[line - 1];
  if (text === undefined) return undefined;
  const chars = Array.from(text);
  if (column > chars.length + 1) return undefined;
  const gutter = String(line);
  const pad = chars
    .slice(0, column - 1)
    .map((c) => (c === '\t' ? '\t' : ' '))
    .join('');
  return `${gutter} | ${text}\n${' '.repeat(gutter.length)} | ${pad}^`;
}
