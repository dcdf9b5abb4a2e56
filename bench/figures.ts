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
