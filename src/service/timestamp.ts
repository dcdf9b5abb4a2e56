/** RFC 3339, UTC, microsecond fraction and `Z` (protocol.md section 1): `2026-11-20T10:15:30.123456Z`. */
export function formatTimestamp(ms: number): string {
  const micros = Math.floor(ms * 1000);
  const wholeMs = Math.floor(micros / 1000);
  const iso = new Date(wholeMs).toISOString(); // 2026-11-20T10:15:30.123Z
  const fraction = String(((micros % 1_000_000) + 1_000_000) % 1_000_000).padStart(6, '0');
  return `${iso.slice(0, 19)}.${fraction}Z`;
}
