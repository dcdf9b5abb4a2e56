/**
 * The canonical text of a date: `YYYY-MM-DD` with an astronomical year of at least four digits,
 * `-` before a year below 0 (`0000-12-31` is 1 BC). ISO 8601's `+010000` expanded form is not
 * used: DuckDB reads it as NULL, while it reads this form at every year it holds. Days to a civil
 * date by H. Hinnant's civil_from_days, exact over the whole 32-bit range of days.
 */
export function dateText(days: number): string {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const y = String(Math.abs(year)).padStart(4, '0');
  return `${year < 0 ? '-' : ''}${y}-${month < 10 ? '0' : ''}${month}-${day < 10 ? '0' : ''}${day}`;
}
