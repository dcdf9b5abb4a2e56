import type { OutputStream } from './io.ts';

/** What the bar shows; fed from the pipeline's progress events. */
export interface ProgressSnapshot {
  readonly rows: number;
  readonly totalRows?: number | undefined;
  readonly pages: number;
  readonly totalPages?: number | undefined;
  readonly bytes: number;
  readonly elapsedMs: number;
  /** Estimated time left, when the source knows it. */
  readonly etaMs?: number | undefined;
}

export interface ProgressBar {
  update(snapshot: ProgressSnapshot): void;
  /** Clears the bar line so a log line can be printed; the next update redraws it. */
  clear(): void;
  /** Draws the final state and ends the line. */
  done(): void;
}

const WIDTH = 24;
const REDRAW_MS = 100;

/** A one-line bar redrawn in place; only for a terminal (the caller checks isTTY). */
export function createProgressBar(stream: OutputStream, label: string, now: () => number = () => performance.now()): ProgressBar {
  let last: ProgressSnapshot | undefined;
  let drawnAt = Number.NEGATIVE_INFINITY;
  let visible = false;
  const draw = (): void => {
    if (!last) return;
    // The terminal's width as it is now (it may have been resized since the last draw).
    stream.write(`\r${renderProgress(label, last, stream.columns ?? 120)}\x1b[K`);
    visible = true;
    drawnAt = now();
  };
  return {
    update(snapshot) {
      last = snapshot;
      if (now() - drawnAt >= REDRAW_MS) draw();
    },
    clear() {
      if (visible) stream.write('\r\x1b[K');
      visible = false;
      drawnAt = Number.NEGATIVE_INFINITY;
    },
    done() {
      if (last) {
        draw();
        stream.write('\n');
      }
      visible = false;
    },
  };
}

/**
 * `label [#########...............] 37% 370,000/1,000,000 rows  pages 12/32  14.2 MB/s  0:05 left`,
 * shorter than `columns`: a narrower terminal gets a shorter bar, then no pages, no speed, no bar
 * (the percentage stays), no time left, in that order, and only then a cut line.
 */
export function renderProgress(label: string, s: ProgressSnapshot, columns = Number.POSITIVE_INFINITY): string {
  const share = s.totalRows !== undefined && s.totalRows > 0 ? Math.min(1, s.rows / s.totalRows) : undefined;
  const bar = (width: number): string => {
    if (share === undefined) return '';
    const filled = Math.round(share * width);
    return width === 0 ? `${String(Math.floor(share * 100)).padStart(3)}% ` : `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.floor(share * 100)).padStart(3)}% `;
  };
  const rows = s.totalRows !== undefined ? `${fmtInt(s.rows)}/${fmtInt(s.totalRows)} rows` : `${fmtInt(s.rows)} rows`;
  const pages = s.totalPages !== undefined ? `pages ${s.pages}/${s.totalPages}` : `pages ${s.pages}`;
  const seconds = s.elapsedMs / 1000;
  const rate = seconds > 0 ? `${(s.bytes / 1e6 / seconds).toFixed(1)} MB/s` : '-- MB/s';
  let eta = s.etaMs;
  if (eta === undefined && share !== undefined && share > 0 && seconds > 0) eta = (s.elapsedMs / share) * (1 - share);
  const left = eta === undefined ? undefined : `${fmtDuration(eta)} left`;
  const line = (width: number, ...tail: (string | undefined)[]): string => [`${label} ${bar(width)}${rows}`, ...tail].filter((t) => t !== undefined).join('  ');
  const candidates = [
    line(WIDTH, pages, rate, left),
    line(WIDTH / 2, pages, rate, left),
    line(WIDTH / 2, rate, left),
    line(WIDTH / 2, left),
    line(0, left),
    line(0),
  ];
  const fits = candidates.find((c) => c.length < columns);
  if (fits !== undefined) return fits;
  return candidates.at(-1)!.slice(0, Math.max(0, columns - 1));
}

function fmtInt(n: number): string {
  return n.toLocaleString('en-US');
}

export function fmtDuration(ms: number): string {
  const total = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const sec = String(total % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${sec}` : `${m}:${sec}`;
}
