import { describe, expect, it } from 'vitest';
import { ProgressTracker, type Progress } from '../../src/pipeline/progress.ts';

describe('ProgressTracker', () => {
  it('counts pages, rows and bytes and estimates the time left from total_row_count', () => {
    let now = 1_000;
    const events: Progress[] = [];
    const tracker = new ProgressTracker((p) => events.push(p), undefined, () => now);
    now += 500;
    tracker.page(100, 4_000, 400, 6_100, 1_200);
    expect(events[0]).toEqual({ pages: 1, rows: 100, bytes: 4_000, httpBytes: 6_100, wireBytes: 1_200, totalRows: 400, elapsedMs: 500, rowsPerSecond: 200, etaMs: 1_500 });
    now += 500;
    // A page that came uncompressed: its wire bytes are its body's.
    tracker.page(300, 12_000, 400, 18_300);
    expect(events[1]).toMatchObject({ pages: 2, rows: 400, bytes: 16_000, httpBytes: 24_400, wireBytes: 19_500, rowsPerSecond: 400, etaMs: 0 });
  });

  it('has no estimate without a total, and counts from the start time given', () => {
    let now = 10;
    const tracker = new ProgressTracker(undefined, 0, () => now);
    now = 20;
    tracker.page(5, 50, undefined);
    expect(tracker.snapshot()).toMatchObject({ elapsedMs: 20, rowsPerSecond: 250, etaMs: undefined, totalRows: undefined });
  });
});
