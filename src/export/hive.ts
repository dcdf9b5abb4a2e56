/** What Hive, Spark and DuckDB write (and read back as NULL) for a NULL or empty partition value. */
export const HIVE_DEFAULT_PARTITION = '__HIVE_DEFAULT_PARTITION__';

// The characters Hive's FileUtils.escapePathName escapes, plus control characters.
const ESCAPED = new Set(['"', '#', '%', "'", '*', '/', ':', '=', '?', '\\', '\u007f', '{', '[', ']', '^']);

export function escapeHivePathName(text: string): string {
  let out = '';
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    out += code < 0x20 || ESCAPED.has(ch) ? `%${code.toString(16).toUpperCase().padStart(2, '0')}` : ch;
  }
  return out;
}

/** `col=value` for one partition column; null and '' become the Hive default partition. */
export function hiveSegment(column: string, value: string | null): string {
  const text = value === null || value === '' ? HIVE_DEFAULT_PARTITION : escapeHivePathName(value);
  return `${escapeHivePathName(column)}=${text}`;
}
