// The soak's arithmetic (bench/soak.ts): the run cut in thirds (the first is the warm-up), the
// least-squares slope per hour with its standard error, whether a slope is 0 within two of them,
// and the level a count held by a retention should settle at for the pace the run kept.

/** Least-squares slope of y over t (hours), and its standard error (0 with fewer than 3 points). */
export function fit(points: readonly { t: number; y: number }[]): { slope: number; error: number } {
  const n = points.length;
  if (n < 2) return { slope: 0, error: 0 };
  const mt = points.reduce((s, p) => s + p.t, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  const num = points.reduce((s, p) => s + (p.t - mt) * (p.y - my), 0);
  const den = points.reduce((s, p) => s + (p.t - mt) ** 2, 0);
  if (den === 0) return { slope: 0, error: 0 };
  const slope = num / den;
  const residuals = points.reduce((s, p) => s + (p.y - my - slope * (p.t - mt)) ** 2, 0);
  return { slope, error: n < 3 ? 0 : Math.sqrt(residuals / (n - 2) / den) };
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.floor(s.length / 2)]!;
}

/** The run's thirds by time up to `end`: the first is the warm-up, the other two are compared to tell a plateau from a climb. */
export function thirds<T extends { t: number }>(xs: readonly T[], end: number): [T[], T[], T[]] {
  return [xs.filter((x) => x.t < end / 3), xs.filter((x) => x.t >= end / 3 && x.t < (2 * end) / 3), xs.filter((x) => x.t >= (2 * end) / 3)];
}

/** Whether a fitted slope is 0 within twice its standard error (no trend the samples can show), or how many errors away it is. */
export function verdict({ slope, error }: { slope: number; error: number }): string {
  if (Math.abs(slope) <= 2 * error) return '0 within 2 standard errors';
  return error === 0 ? 'not 0' : `not 0: ${(Math.abs(slope) / error).toFixed(1)} standard errors`;
}

/**
 * How many executions a service keeps at a steady pace: each is kept while it runs, then until its
 * result expires, then its record's own retention, and is deleted by the first sweep after that
 * (half a sweep interval late on average). `perSecond`: executions finished per second.
 */
export function heldAtPace(perSecond: number, held: { runSeconds: number; retentionS: number; recordRetentionS: number; sweepIntervalS: number }): number {
  return perSecond * (held.runSeconds + held.retentionS + held.recordRetentionS + held.sweepIntervalS / 2);
}

/** Events per second in each third of the run (times in hours, `end` the run's end). */
export function ratesOfThirds(events: readonly { t: number }[], end: number): [number, number, number] {
  const seconds = (end * 3600) / 3;
  const [a, b, c] = thirds(events, end);
  return [a.length / seconds, b.length / seconds, c.length / seconds];
}

/** Whether a run of `minutes` has a warm-up (its first third) at least as long as `horizonS`, the seconds an execution is held. */
export function warmupCovers(minutes: number, horizonS: number): boolean {
  return (minutes * 60) / 3 >= horizonS;
}
