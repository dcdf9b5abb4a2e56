/** Rows as an aligned text table (the `table` format of `sluice query`; for people, not parsers). */
export function renderTable(columns: readonly string[], rows: readonly Record<string, unknown>[], maxWidth = 40): string {
  const cells = rows.map((row) => columns.map((c) => cellText(row[c], maxWidth)));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: readonly string[]) => values.map((v, i) => v.padEnd(widths[i]!)).join(' | ').trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('-+-');
  return [line(columns), rule, ...cells.map(line)].join('\n') + '\n';
}

function cellText(value: unknown, maxWidth: number): string {
  let text: string;
  if (value === null || value === undefined) text = 'NULL';
  else if (typeof value === 'string') text = value;
  else if (typeof value === 'bigint' || typeof value === 'number' || typeof value === 'boolean') text = String(value);
  else if (value instanceof Date) text = value.toISOString();
  else if (value instanceof Uint8Array) text = `0x${Buffer.from(value).toString('hex')}`;
  else text = JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v instanceof Map ? Object.fromEntries(v) : v));
  text = text.replace(/[\r\n\t]/g, ' ');
  return text.length > maxWidth ? `${text.slice(0, maxWidth - 1)}…` : text;
}
