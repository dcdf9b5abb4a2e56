// What the soak (bench/soak.ts) prints of each process it watched, and the one line per process it
// records for docs/performance.md.
import { fit, heldAtPace, median, ratesOfThirds, thirds, verdict } from './soakStats.ts';

export const MiB = 1024 * 1024;

/** A finished run (or a request read), at `t` hours; the schedule's runs carry its threads' memory. */
export interface Run {
  readonly t: number;
  readonly ms: number;
  readonly mem?: { heapUsed: number; external: number; arrayBuffers: number; wasm: number; serviceHeapUsed: number; serviceExternal: number };
}

export interface Sample {
  readonly t: number;
  readonly rss: number;
  readonly fds: number;
  /** Open descriptors by kind (soakProc.ts descriptorKind). */
  readonly fdKinds: Record<string, number>;
  readonly disk: number;
  /** Execution records the service keeps (one JSON file each, each also held in its memory). */
  readonly records: number;
  /** RSS by the kind of mapping holding it (every few samples: reading smaps costs). */
  readonly split?: { v8Pages: number; arenas: number; files: number; otherAnon: number };
}

/** What the service's settings hold executions for (seconds), to say what the records should level at. */
export interface Held {
  readonly retentionS: number;
  readonly recordRetentionS: number;
  readonly sweepIntervalS: number;
}

const three = (xs: readonly [number, number, number] | readonly number[], digits = 0): string => xs.map((x) => x.toFixed(digits)).join(' / ');

/**
 * A level after warm-up: the slope fitted over the last two thirds, with its standard error (a
 * slope within twice its error is no trend the samples can show), the slope over the last third
 * alone (a plateau being reached shows a smaller one), and the median of each third (the median,
 * not the last sample, which swings with the run in flight).
 */
function level(samples: readonly Sample[], y: (s: Sample) => number, unit: string): string {
  const end = samples.at(-1)!.t;
  const [early, middle, late] = thirds(samples, end);
  const all = fit([...middle, ...late].map((s) => ({ t: s.t, y: y(s) })));
  const last = fit(late.map((s) => ({ t: s.t, y: y(s) })));
  const med = (xs: readonly Sample[]) => median(xs.map(y));
  return `${three([med(early), med(middle), med(late)])}${unit} (medians of the thirds), slope ${all.slope.toFixed(1)} ± ${all.error.toFixed(1)}${unit}/h after warm-up (${verdict(all)}), ${last.slope.toFixed(1)} ± ${last.error.toFixed(1)}${unit}/h over the last third`;
}

/** Medians of the thirds of each part of the RSS (V8's pages, arenas, files, the rest). */
function rssSplit(samples: readonly Sample[]): string | undefined {
  const split = samples.filter((s) => s.split !== undefined);
  if (split.length === 0) return undefined;
  const parts = thirds(split, samples.at(-1)!.t);
  const part = (k: keyof NonNullable<Sample['split']>) => three(parts.map((xs) => median(xs.map((s) => s.split![k] / MiB))));
  return `  RSS by mapping  V8's pages (anonymous < 1 MiB) ${part('v8Pages')} MiB, malloc's arenas ${part('arenas')} MiB, files ${part('files')} MiB, other anonymous ${part('otherAnon')} MiB (medians of the thirds)`;
}

/** Medians of the thirds of each kind of descriptor. */
function descriptorKinds(samples: readonly Sample[]): string {
  const kinds = [...new Set(samples.flatMap((s) => Object.keys(s.fdKinds)))].sort();
  const parts = thirds(samples, samples.at(-1)!.t);
  return `  by kind      ${kinds.map((k) => `${k} ${three(parts.map((xs) => median(xs.map((s) => s.fdKinds[k] ?? 0))))}`).join('; ')}`;
}

/** The records against what the retentions should hold at the pace of each third. */
function recordsAtPace(samples: readonly Sample[], done: readonly Run[], held: Held): string {
  const end = samples.at(-1)!.t;
  const rates = ratesOfThirds(done, end);
  const runSeconds = median(done.map((r) => r.ms)) / 1000 || 0;
  const expected = rates.map((r) => heldAtPace(r, { runSeconds, ...held }));
  return `  pace         ${three(rates.map((r) => r * 60), 1)} a minute (thirds), at which the retentions hold ${three(expected)} records`;
}

function memorySplit(runs: readonly Run[]): string | undefined {
  const withMem = runs.filter((r) => r.mem !== undefined);
  if (withMem.length === 0) return undefined;
  const [early, , late] = thirds(withMem, withMem.at(-1)!.t);
  const med = (xs: readonly Run[], k: keyof NonNullable<Run['mem']>) => (median(xs.map((r) => r.mem![k])) / MiB).toFixed(0);
  const part = (k: keyof NonNullable<Run['mem']>) => `${med(early, k)} -> ${med(late, k)}`;
  return [
    `  main thread  V8 heap used ${part('heapUsed')} MiB, external ${part('external')} MiB (ArrayBuffers ${part('arrayBuffers')}), parquet-wasm memory ${part('wasm')} MiB (medians, first -> last third)`,
    `  service thread V8 heap used ${part('serviceHeapUsed')} MiB, external ${part('serviceExternal')} MiB (medians, first -> last third)`,
  ].join('\n');
}

/**
 * The report of one process. `done`: every execution its service finished (the schedule's runs of
 * both jobs, serve's requests), for the pace; `latencies`: the runs whose times are compared.
 */
export function report(name: string, samples: readonly Sample[], latencies: readonly Run[], done: readonly Run[], held: Held): string {
  const last = samples.at(-1)!;
  const [early, , late] = thirds(latencies, last.t);
  const lines = [
    `${name}: ${samples.length} samples over ${(last.t * 60).toFixed(1)} min; first / middle / last third:`,
    `  RSS          ${level(samples, (s) => s.rss / MiB, ' MiB')}; max ${(Math.max(...samples.map((s) => s.rss)) / MiB).toFixed(0)} MiB`,
    rssSplit(samples),
    memorySplit(latencies),
    `  descriptors  ${level(samples, (s) => s.fds, '')}; max ${Math.max(...samples.map((s) => s.fds))}`,
    descriptorKinds(samples),
    `  disk         ${level(samples, (s) => s.disk / MiB, ' MiB')}; max ${(Math.max(...samples.map((s) => s.disk)) / MiB).toFixed(0)} MiB`,
    `  records      ${level(samples, (s) => s.records, '')}; max ${Math.max(...samples.map((s) => s.records))}`,
    recordsAtPace(samples, done, held),
    `  latency      median ${median(early.map((l) => l.ms)).toFixed(0)} ms in the first third, ${median(late.map((l) => l.ms)).toFixed(0)} ms in the last (${latencies.length} in all)`,
  ];
  return lines.filter((l) => l !== undefined).join('\n');
}

/** The figure of one process for docs/performance.md: `pace` says what it ran (the clock, the period), so that the row's figures carry it. */
export function summaryFigure(pace: string, samples: readonly Sample[], latencies: readonly Run[], load: string): string {
  const end = samples.at(-1)!.t;
  const [, middle, late] = thirds(samples, end);
  const warm = [...middle, ...late];
  const rss = fit(warm.map((s) => ({ t: s.t, y: s.rss / MiB })));
  const fds = fit(warm.map((s) => ({ t: s.t, y: s.fds })));
  const records = fit(warm.map((s) => ({ t: s.t, y: s.records })));
  const med = (xs: readonly Sample[], y: (s: Sample) => number) => median(xs.map(y)).toFixed(0);
  const disk = Math.max(...samples.map((s) => s.disk)) / MiB;
  const lat = thirds(latencies, end);
  return (
    `${pace}, ${(end * 60).toFixed(0)} min: RSS ${med(middle, (s) => s.rss / MiB)} -> ${med(late, (s) => s.rss / MiB)} MiB (medians of the last two thirds), slope ${rss.slope.toFixed(1)} ± ${rss.error.toFixed(1)} MiB/h (${verdict(rss)}); ` +
    `descriptors ${med(middle, (s) => s.fds)} -> ${med(late, (s) => s.fds)}, ${fds.slope.toFixed(1)} ± ${fds.error.toFixed(1)}/h (${verdict(fds)}); ` +
    `records ${med(middle, (s) => s.records)} -> ${med(late, (s) => s.records)}, ${records.slope.toFixed(0)} ± ${records.error.toFixed(0)}/h (${verdict(records)}); disk at most ${disk.toFixed(0)} MiB; ` +
    `median latency ${median(lat[0].map((l) => l.ms)).toFixed(0)} -> ${median(lat[2].map((l) => l.ms)).toFixed(0)} ms (${latencies.length} runs or reads, load ${load})`
  );
}
