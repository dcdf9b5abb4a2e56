/** JSON for people and for `jq`: bigints as exact numbers would break JSON.parse elsewhere, so as strings. */
export function toJson(value: unknown, indent = 2): string {
  return `${JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), indent)}\n`;
}
