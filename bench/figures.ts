// The figures of docs/performance.md, the one place measured figures live: the docs and code
// comments link to that page instead of quoting numbers that drift. A bench area records each of
// its figures with recordFigure(); `npm run bench` (bench/index.ts) then rewrites the page's table:
// the rows of the areas that ran take this run's values, the others keep the page's.
import { appendFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';

/** Every figure of the page, in its order: the bench area that measures it and what it is. */
export const FIGURES = [
  { id: 'rows-json', area: 'parallel', what: '`stream()` rows over JSON pages, time against a bare `JSON.parse` of the same pages' },
  { id: 'batches-json', area: 'parallel', what: '`.batches()` over JSON pages, time against a bare `JSON.parse` of the same pages' },
  { id: 'batches-arrow', area: 'parallel', what: '`.batches()` over Arrow pages, speed against over JSON pages' },
  { id: 'batches-peak-json', area: 'parallel', what: 'peak RSS of a process reading `.batches()` over JSON pages, 1M rows / 5M rows' },
  { id: 'batches-peak-arrow', area: 'parallel', what: 'peak RSS of a process reading `.batches()` over Arrow pages, 1M rows / 5M rows' },
  { id: 'export-json-duckdb', area: 'parallel', what: 'export to zstd Parquet over JSON pages, one thread, time against DuckDB `COPY ... TO parquet` of the same rows' },
  { id: 'export-native-duckdb', area: 'parallel', what: 'export to zstd Parquet over JSON pages by the native path (DuckDB writes from the pages), time against DuckDB `COPY ... TO parquet` of the same rows' },
  { id: 'export-native', area: 'parallel', what: 'export to zstd Parquet over JSON pages, native path speed against the general path (JS decoders, one thread)' },
  { id: 'export-native-peak', area: 'parallel', what: 'peak RSS of the native export over JSON pages, 1M rows / 5M rows' },
  { id: 'export-arrow-duckdb', area: 'parallel', what: 'export to zstd Parquet over Arrow pages, one thread, time against DuckDB `COPY ... TO parquet`' },
  { id: 'export-arrow', area: 'parallel', what: 'export to zstd Parquet over Arrow pages, speed against over JSON pages (one thread each)' },
  { id: 'export-workers-json', area: 'parallel', what: 'export over JSON pages with `workers: 2`, speed against `workers: 1`' },
  { id: 'export-workers-arrow', area: 'parallel', what: 'export over Arrow pages with `workers: 2`, speed against `workers: 1`' },
  { id: 'export-peak-json', area: 'parallel', what: "peak RSS of the one-thread export over JSON pages, without / with the image's memory settings" },
  { id: 'export-peak-arrow', area: 'parallel', what: "peak RSS of the one-thread export over Arrow pages, without / with the image's memory settings" },
  { id: 'export-time-image', area: 'parallel', what: "time of the one-thread export over JSON pages with the image's memory settings, against without them" },
  { id: 'quickstart-rate', area: 'jobs', what: 'the quickstart job (1M rows to Parquet on the embedded service), rows per second against the bare pipeline reading the same rows' },
  { id: 'quickstart-peak', area: 'jobs', what: 'peak RSS of the quickstart job, the embedded service and DuckDB in the process' },
  { id: 'dialect-translate', area: 'dialect', what: 'DuneSQL -> DuckDB SQL translation, time per statement of the conformance cases and of a 3 KB query; heap the translator keeps' },
  { id: 'dialect-execute', area: 'dialect', what: 'an execution of a short aggregate as DuneSQL, time against the same SQL as DuckDB SQL (translation and session setting included)' },
  { id: 'soak-schedule', area: 'soak', what: '`sluice schedule` soak (two every-minute jobs, a 200,000-row Parquet export and an append, on the embedded service, clock x20, results kept 60 s; the process with the memory settings \`sluice\` gives itself): RSS medians of the middle and last thirds and slope after warm-up (± its standard error), descriptors slope, disk, median run time first -> last third' },
  { id: 'soak-serve', area: 'soak', what: '`sluice serve` soak (an execution of 5,000 rows and a page read every 250 ms): RSS medians of the middle and last thirds and slope after warm-up (± its standard error), descriptors slope, disk, median request time first -> last third' },
] as const;

export type FigureId = (typeof FIGURES)[number]['id'];

/** The file bench/index.ts hands each area, to which recordFigure appends one JSON line per figure. */
export const FIGURES_FILE_ENV = 'SLUICE_BENCH_FIGURES';

export interface Measured {
  readonly value: string;
  /** When and on what: the date, the cores, the load average (the machine may be shared). */
  readonly measured: string;
}

/** Records a figure of this run for docs/performance.md (a no-op outside `npm run bench`). */
export function recordFigure(id: FigureId, value: string): void {
  const file = process.env[FIGURES_FILE_ENV];
  if (file === undefined) return;
  const measured = `${new Date().toISOString().slice(0, 10)}, ${availableParallelism()} cores, load ${loadavg()[0]!.toFixed(1)}`;
  appendFileSync(file, `${JSON.stringify({ id, value, measured })}\n`);
}

/** The figures recorded in a figures file, by id (a later line wins). */
export function readRecorded(text: string): Map<string, Measured> {
  const out = new Map<string, Measured>();
  for (const line of text.split('\n').filter((l) => l.trim() !== '')) {
    const { id, value, measured } = JSON.parse(line) as { id: string } & Measured;
    out.set(id, { value, measured });
  }
  return out;
}

const PAGE_HEAD = `# Performance

<!-- Written by \`npm run bench\` (bench/figures.ts): an area that runs rewrites its rows, the others
keep theirs. Do not edit the table by hand. -->

The current figures of sluice, each measured by the bench area named beside it (\`npm run bench --
AREA\`; \`npm run bench\` runs them all). Speeds are ratios against a baseline measured in the same
run on the same machine, because absolute times depend on the machine and on what else runs on it;
memory is the peak resident set of the whole process (threads, and where said the embedded service
and DuckDB, included). "Measured" says when, on how many cores and under what load average: a load
well above the core count means the machine was shared and the times are noisy. The bench prints
more than this table (every case, the absolute times, the targets); this page keeps the figures
the docs rely on, and the docs and code comments link here instead of quoting numbers.

| Figure | Value | Bench | Measured |
|---|---|---|---|
`;

const PAGE_TAIL = `
Sizes are those of \`sample.events\` (8 columns); "1M rows" is 1,000,000 rows read from the local
service running in a process of its own, each result read once the service had finished encoding
it. "The image's memory settings" are the Dockerfile's \`NODE_OPTIONS=--max-semi-space-size=8\` and
\`MALLOC_MMAP_THRESHOLD_=131072\` ([operations.md](operations.md#memory)).

The soak (\`npm run bench -- soak\`, \`SOAK_MINUTES\` long, 4 by default) samples each process's
RSS, open descriptors and data folder on disk every 5 s and prints, for each, the medians of the
run's thirds (the first is the warm-up) and the slope over the last two thirds with its standard
error. RSS swings by tens of MiB from one sample to the next with the run in flight, so over minutes
a slope of tens of MiB an hour is within its error; what tells a plateau from a climb is the
medians of the last two thirds and a slope within twice its error. Disk is held by the retention
the soak sets (60 s).

The schedule process runs with the memory settings \`sluice\` gives itself
([operations.md](operations.md#memory)); \`SLUICE_MEMORY_DEFAULTS=0\` runs it without them. Until
2026-12-02 the bench started it without them, unlike the \`sluice schedule\` a user runs, and
measured a climb most of which the command does not have: 336 -> 378 MiB over the 8 minutes after
warm-up (361 MiB/h, 12 minutes, quiet machine). Without them glibc's malloc raises its mmap threshold (up to
32 MB) once a big buffer is freed, and the page-sized buffers of the main thread and the service
thread (page bodies and texts, Arrow columns) come from its arenas, up to 8 per core, each of which
keeps its high-water mark: RSS creeps up as each arena meets its largest run. Side by side on the
same machine (2026-12-02, 2 cores shared, load 16-27; 30 and 28 minutes, 91 and 78 snapshot runs;
the arenas and V8's pages read from \`/proc/PID/smaps\` every 30 s beside the bench):

| \`sluice schedule\` soak | with the settings (as the command runs) | without (\`SLUICE_MEMORY_DEFAULTS=0\`) |
|---|---|---|
| RSS, medians of the thirds | 283 / 290 / 294 MiB | 316 / 322 / 332 MiB |
| RSS slope after warm-up | 25 ± 11 MiB/h | 59 ± 13 MiB/h |
| malloc's arenas, medians of the thirds | 21 / 24 / 23 MiB | 90 / 94 / 98 MiB |
| anonymous mappings under 1 MiB (V8's pages), medians of the thirds | 69 / 74 / 76 MiB | 64 / 67 / 70 MiB |
| main thread's V8 heap used, first -> last third | 31 -> 33 MiB | 31 -> 33 MiB |
| parquet-wasm's memory | 17 MiB | 18 MiB |

A second run with the settings on a quieter machine (28 minutes, load 7-12, 228 snapshot runs):
RSS medians 292 / 305 / 313 MiB, slope 39 ± 17 MiB/h after warm-up and 30 ± 52 MiB/h over the last
third; arenas 49 / 52 / 54 MiB, V8's pages 76 / 90 / 91 MiB, main thread's heap used 31 -> 34 MiB.
So the settings remove most of the climb (the arenas' 70-100 MiB), and what is left rises more
slowly from one third to the next, but half an hour does not show it at zero: a slope of 25-40 MiB/h
is two standard errors. The descriptors and disk were flat in every run (disk at most 280 MiB,
held by the 60 s retention).

## Part threads (\`workers\`), measured with the service on another core

The \`parallel\` bench runs the service in a process of its own but on the same cores as the
export. To see whether part threads gain once the service does not take their core, the service
(\`startService\`, 1M rows of \`sample.events\`) ran pinned to core 1 (\`taskset -c 1\`) and
\`sluice run --execution ID --workers N\` (zstd Parquet, 4 parts of 250,000 rows) pinned to core 0, or
to both cores, twice per case (2026-12-01, 2 cores, load average 23-40: the machine was shared
by eight sessions). Wall seconds, then CPU seconds (user + system) and peak RSS of the export:

| Wire | Export on | \`workers: 1\` | \`workers: 2\` |
|---|---|---|---|
| JSON | core 0 | 70.4 / 94.6 s; CPU 5.9 / 6.3 s; 211-221 MB | 77.7 / 103.7 s; CPU 8.0 / 9.0 s; 388-404 MB |
| JSON | cores 0,1 | 89.1 / 85.7 s; CPU 6.3 / 6.4 s; 213-232 MB | 66.7 / 93.8 s; CPU 7.8 / 9.1 s; 415-428 MB |
| Arrow | core 0 | 37.9 / 38.3 s; CPU 3.0 / 3.0 s; 213-215 MB | 29.1 / 28.6 s; CPU 3.9 / 4.2 s; 355-370 MB |
| Arrow | cores 0,1 | 22.6 / 21.4 s; CPU 2.4 / 3.0 s; 212-227 MB | 9.1 / 19.2 s; CPU 3.2 / 4.2 s; 344-353 MB |

At that load the wall times are 10 to 30 times the CPU times: the export mostly waited for a core,
and a second thread mainly buys a larger share of a contended machine (the same happens pinned to
one core, where no parallel work is possible), so the wall times say nothing about parallel work.
What the run can say: \`workers: 2\` costs 30-45 % more CPU per export and 130-200 MB more peak RSS,
on both wires; the \`parallel\` bench measured 0.78x (JSON) and 0.82x (Arrow) at load 2.9, and
1.10x and 0.59x at load 22 (the table above). Nothing measured shows a gain that holds.
`;

/** The page with this run's figures, every other row kept as the previous page had it. */
export function performancePage(previous: string, recorded: ReadonlyMap<string, Measured>): string {
  const kept = new Map<string, Measured>();
  for (const [, what, value, measured] of previous.matchAll(/^\| (.+) \| ([^|]+) \| `[a-z]+` \| ([^|]+) \|$/gm)) {
    kept.set(what!, { value: value!, measured: measured! });
  }
  const rows = FIGURES.map((f) => {
    const m = recorded.get(f.id) ?? kept.get(f.what) ?? { value: 'not measured yet', measured: '' };
    return `| ${f.what} | ${m.value} | \`${f.area}\` | ${m.measured} |`;
  });
  return `${PAGE_HEAD}${rows.join('\n')}\n${PAGE_TAIL}`;
}
