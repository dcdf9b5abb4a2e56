import { UploadError } from './errors.ts';

/**
 * The column names of the header record (RFC 4180: fields may be double-quoted, with `""` for a
 * quote and line breaks inside quotes). Names must be non-empty and unique ignoring case, since
 * they become the table's column names and DuckDB identifiers ignore case.
 */
export function csvHeader(text: string): string[] {
  const names: string[] = [];
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let field = '';
  for (;;) {
    if (text[i] === '"') {
      i += 1;
      for (;;) {
        if (i >= text.length) throw new UploadError('Bad Request: CSV line 1 (the header): a quoted column name is not closed');
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i += 1;
          break;
        }
        field += text[i];
        i += 1;
      }
      if (i < text.length && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') {
        throw new UploadError(`Bad Request: CSV line 1 (the header): unexpected text after the quoted column name "${field}"`);
      }
    } else {
      while (i < text.length && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') field += text[i++];
    }
    names.push(field.trim());
    field = '';
    if (text[i] === ',') {
      i += 1;
      continue;
    }
    break;
  }
  const seen = new Map<string, number>();
  names.forEach((n, k) => {
    if (n === '') throw new UploadError(`Bad Request: CSV line 1 (the header): column ${k + 1} has no name; the first line must name every column`);
    if (n.includes('\u0000')) {
      throw new UploadError(`Bad Request: CSV line 1 (the header): the name of column ${k + 1} holds a NUL character (U+0000); column names must be text without NUL`);
    }
    const prev = seen.get(n.toLowerCase());
    if (prev !== undefined) throw new UploadError(`Bad Request: CSV line 1 (the header): columns ${prev + 1} and ${k + 1} are both named "${n}"; column names must be unique`);
    seen.set(n.toLowerCase(), k);
  });
  return names;
}
