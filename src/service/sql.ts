// Quoting of values and names spliced into SQL text run by DuckDB. Every string literal and quoted
// identifier the service builds goes through these two functions, so there is one place to get it right.
//
// DuckDB follows standard SQL here: inside '...' only a quote is special (doubled); a backslash is an
// ordinary character (a plain literal has no escape processing). Inside "..." only a double quote is
// special (doubled). Non-ASCII text passes through as it is. DuckDB reads a statement only up to a NUL
// character, so a NUL inside a quoted text leaves the quote unterminated and the whole statement fails
// to parse: nothing after the NUL can run.

/** `text` as a SQL string literal: `it's` -> `'it''s'`. */
export function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** `name` as a quoted SQL identifier: `a"b` -> `"a""b"`. */
export function sqlIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
