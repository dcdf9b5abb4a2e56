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
  { id: 'firstread-download', area: 'firstread', what: 'first read of a fresh 1M-row result right after COMPLETED, encoded on first read (the default): raw download of every JSON page (concurrency 4) against `JSON.parse` of the same bytes; at completion (the earlier default)' },
  { id: 'firstread-arrow', area: 'firstread', what: 'the same first read as Arrow (download + RecordBatchReader), speed against JSON download + `JSON.parse`; encoded on first read / at completion' },
  { id: 'firstread-end-to-end', area: 'firstread', what: 'submit to the last page of that first read, encoded on first read against at completion: JSON / Arrow' },
  { id: 'quickstart-rate', area: 'jobs', what: 'the quickstart job (1M rows to Parquet on the embedded service), rows per second against the bare pipeline reading the same rows' },
  { id: 'quickstart-peak', area: 'jobs', what: 'peak RSS of the quickstart job, the embedded service and DuckDB in the process' },
  { id: 'dialect-translate', area: 'dialect', what: 'DuneSQL -> DuckDB SQL translation, time per statement of the conformance cases and of a 3 KB query; heap the translator keeps' },
  { id: 'dialect-execute', area: 'dialect', what: 'an execution of a short aggregate as DuneSQL, time against the same SQL as DuckDB SQL (translation and session setting included)' },
  { id: 'soak-schedule', area: 'soak', what: '`sluice schedule` soak (two every-minute jobs, a 200,000-row Parquet export and an append, on the embedded service, clock x20, results kept 60 s): slopes after warm-up, disk, median run time first -> last third' },
  { id: 'soak-serve', area: 'soak', what: '`sluice serve` soak (an execution of 5,000 rows and a page read every 250 ms): slopes after warm-up, disk, median request time first -> last third' },
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

The soak (\`npm run bench -- soak\`, \`SOAK_MINUTES\` long, 4 by default) fits a line to each process's
RSS, open descriptors and data folder on disk after its first third: over minutes on a shared
machine a slope of a few MiB or descriptors an hour is noise (the samples swing more than that
between runs); what it shows is the absence of a steady climb (before results were detached
when idle, \`sluice schedule\` gained a descriptor a run) and disk held by the retention it sets.

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
