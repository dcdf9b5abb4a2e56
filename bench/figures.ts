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
  { id: 'export-peak-json', area: 'parallel', what: "peak RSS of the one-thread export over JSON pages, without / with the image's memory settings" },
  { id: 'export-peak-arrow', area: 'parallel', what: "peak RSS of the one-thread export over Arrow pages, without / with the image's memory settings" },
  { id: 'export-time-image', area: 'parallel', what: "time of the one-thread export over JSON pages with the image's memory settings, against without them" },
  { id: 'wire-native-csv', area: 'wire', what: 'export to zstd Parquet over CSV pages by the native path (the default for a service without Arrow pages; pages in zstd, handed to DuckDB as received), time (and CPU) against DuckDB `COPY ... TO parquet` of the same rows' },
  { id: 'wire-csv-floor', area: 'wire', what: "the floor of any reader of those CSV pages with DuckDB: the pages already on disk, one plain typed `read_csv` statement to zstd Parquet (no checks, nothing fetched or stored), 1 / 2 DuckDB threads, time (and CPU) against the same `COPY`" },
  { id: 'wire-csv-checked', area: 'wire', what: "the same CSV pages on disk read by the native path's own statement (every column as text, checked and cast as an export checks them; nothing fetched or stored), 1 / 2 DuckDB threads, time (and CPU) against the same `COPY`" },
  { id: 'wire-native-csv-plain', area: 'wire', what: "the same over CSV pages uncompressed (the client's `compression: off`: each page received, joined and staged by the client as text)" },
  { id: 'wire-native-json', area: 'wire', what: 'export to zstd Parquet over JSON pages by the native path, time (and CPU) against DuckDB `COPY ... TO parquet` of the same rows' },
  { id: 'wire-json-floor', area: 'wire', what: "the floor of any reader of those JSON pages with DuckDB: each page's rows array already on disk, one plain typed `read_json` statement to zstd Parquet (no checks, nothing fetched or stored), 1 / 2 DuckDB threads, time (and CPU) against the same `COPY`" },
  { id: 'wire-json-checked', area: 'wire', what: "the same JSON pages' rows arrays on disk read by the native path's own statement (its typed columns, checked and cast as an export checks them; nothing fetched or stored), 1 / 2 DuckDB threads, time (and CPU) against the same `COPY`" },
  { id: 'wire-native-general', area: 'wire', what: 'native export over CSV / over JSON pages, speed against the general path over JSON pages (JS decoders, one thread)' },
  { id: 'wire-native-peak', area: 'wire', what: 'peak RSS of the native export over CSV pages, 1M rows / 5M rows' },
  { id: 'wire-threads', area: 'wire', what: 'native export over CSV pages with 2 DuckDB threads, speed (and CPU) against 1, the service on the same 2 cores' },
  { id: 'wire-official', area: 'wire', what: 'the official TypeScript client reading a whole result at 50 ms per request, time against `stream()` rows over JSON pages' },
  { id: 'wire-link', area: 'wire', what: 'native export to zstd Parquet over a 100 Mbit/s link with a 50 ms round trip, time against the bare zstd download of the same CSV pages' },
  { id: 'firstread-download', area: 'firstread', what: 'first read of a fresh 1M-row result right after COMPLETED, encoded on first read (the default): raw download of every JSON page (concurrency 4) against `JSON.parse` of the same bytes; at completion (the earlier default)' },
  { id: 'firstread-arrow', area: 'firstread', what: 'the same first read as Arrow (download + RecordBatchReader), speed against JSON download + `JSON.parse`; encoded on first read / at completion' },
  { id: 'firstread-end-to-end', area: 'firstread', what: 'submit to the last page of that first read, encoded on first read against at completion: JSON / Arrow' },
  { id: 'quickstart-rate', area: 'jobs', what: 'the quickstart job (1M rows to Parquet on the embedded service), rows per second against the bare pipeline reading the same rows' },
  { id: 'quickstart-peak', area: 'jobs', what: 'peak RSS of the quickstart job, the embedded service and DuckDB in the process' },
  { id: 'dialect-translate', area: 'dialect', what: 'DuneSQL -> DuckDB SQL translation, time per statement of the conformance cases and of a 3 KB query; heap the translator keeps' },
  { id: 'dialect-execute', area: 'dialect', what: 'an execution of a short aggregate as DuneSQL, time against the same SQL as DuckDB SQL (translation and session setting included)' },
  { id: 'soak-schedule', area: 'soak', what: '`sluice schedule` soak (two every-minute jobs, a 200,000-row Parquet export and an append, on the embedded service under a compressed clock, its speed first in the figure; results kept 60 s and execution records 120 s more; the process with the memory settings \`sluice\` gives itself): RSS, descriptors and records, medians of the middle and last thirds and slope after warm-up (± its standard error); disk; median run time first -> last third' },
  { id: 'soak-serve', area: 'soak', what: '`sluice serve` soak (an execution of 5,000 rows and its page read at a steady pace, first in the figure; same retentions): RSS, descriptors and records, medians of the middle and last thirds and slope after warm-up (± its standard error); disk; median request time first -> last third' },
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
it (the \`firstread\` rows: right after COMPLETED, while the format's encoder writes).

The first JSON read (\`firstread\`, 1M rows, encoded on first read): its pages come as fast as the
encoder writes them, DuckDB rendering each row's text (\`renderedRowsSql\`) and the service copying
the texts into the rows files and indexes. Copying a run of adjacent rows at a time
(\`engine/encoding/rowSplit.ts\`, since 2026-12-02) instead of one row at a time took the encoder's
process CPU for 1M rows from 3.2-3.6 s to 2.0-2.2 s for JSON alone and from 6.0 s to 2.5 s for JSON
and CSV (load 24; the files byte for byte the same), and the bench's "JSON + CSV encoding" from
3.8 s of CPU (2.3 s of it beyond DuckDB's rendering, load 1-5) to 2.7 s (0.7 s beyond it, load 30).
The first read, raw download against \`JSON.parse\`: 1.41x (load 10-12) and 1.75x / 1.77x (two runs
at load 17-18) before, 1.23x after (load 28). What is left is DuckDB's rendering, about 1.7 s of CPU
for 1M rows x 8 columns, the \`timestamp with time zone\` column's text the largest part of it: the
target of 0.5x is not reached on two shared cores. Tried and not kept: a 16 MB
\`streaming_buffer_size\` for the encoder's stream (DuckDB's threads render ahead: 5-10% less CPU at
load 29, and the setting is per connection, which the files instance's locked configuration does
not allow), and rendering blocks of 31,250 rows on two or three connections at once, materialized
(20-30% more CPU; the wall time at load 33 said nothing either way, and a block of wide rows would
not fit the files instance's memory).

Encoding only what is read (\`engine.encode_results: on_first_read\`, the default since 2026-12-02,
against \`at_completion\`, the earlier default): the quickstart at 5M rows, \`sluice run
config/examples/quickstart.yaml\` with \`SLUICE_SAMPLE_ROWS=5000000\` in a fresh folder (the sample
generated: first figure) and again in the same folder, \`/usr/bin/time -v\`, 2 cores at load 13-16
(machine shared): 2:44 / 2:55 at completion, 1:26 / 1:06 on first read (0.52x / 0.38x the time; the
job's own time 2:22 / 2:52 against 1:06 / 1:01); CPU 55.8 / 52.9 s against 40.1 / 30.9 s; peak RSS
369 / 382 MB against 373 / 388 MB; the results folder after the two runs 1.7 GB against 682 MB
(the job reads Arrow: no JSON or CSV written). The execution alone (\`firstread\`: 1M rows, three
turns on two services at once, load 27) took 5.6x as long with every format encoded at completion.

The Arrow encoder from one scan of the result (2026-12-02; engine/encoding/arrowChunks.ts, before:
a page query and a sort per chunk of 31,250 rows). The encoder alone on 1M rows of \`sample.events\`
(stored as the engine stores a result, the files instance's settings, this process, load 30-36):
0.72-0.84 s of process CPU (0.30-0.34 s of it on the JS thread) against 1.22-1.52 s (0.45-0.47 s);
the scan itself is 0.08 s. The first Arrow read of the \`firstread\` bench (load 12-19): 4.48 s
of download and 0.02 s of RecordBatchReader, 2.86x as fast as JSON's 9.16 s + 3.73 s of
\`JSON.parse\` (1.60x before, at load 10-12); short of the 5x target. What is left is mostly V8's collector, on its own threads (about 0.4
s: the column buffers and DuckDB's chunk views of each chunk), and the column copies. The
quickstart at 5M rows as above, before -> after, each run in a fresh folder then reused, on 2
shared cores (loads between 17 and 38 and never the same for two runs: the times say little, the
CPU more): on first read 2:26 / 3:10 -> 3:00 / 3:16 (CPU 37.8 / 32.8 s -> 34.3 / 29.4 s; peak RSS
381 / 396 MB -> 381 / 408 MB); at completion 6:51 / 8:25 -> 5:13 / 3:54 (CPU 61.6 / 58.3 s -> 60.3
/ 53.2 s; 383 / 392 MB -> 382 / 393 MB). On first read against at completion, CPU 0.61x / 0.56x ->
0.57x / 0.55x. The Arrow encoding is about 4 s of the job's 30-35 s of CPU at 5M rows: the rest
is the sample's generation (fresh folder), the execution and the job's own reading and Parquet
writing, which this change does not touch. On a quieter machine (load 6-10), one reused run each
after the change: on first read 1:05 (CPU 24.4 s, peak RSS 404 MB) against at completion 0:54 (CPU
32.8 s, 400 MB): 1.21x the time. With every format written at completion (DuckDB rendering on its
threads beside the Arrow chunks) the job then reads byte ranges; on first read the job waits on the
one Arrow encoder (one JS thread), and a reader more than eight pages ahead of it is served by page
queries meanwhile. The 0.5x target is not met; where the time goes in that run is not measured yet.

Where a first read's time went, and what changed (2026-12-02, later; pages timed one by one against
the encoder's progress in the service, load 6-12). The Arrow encoder told its readers each chunk was
written one chunk early (its write's callback read the loop's offset after the loop had moved on):
every reader woken found its page missing and had it built by a page query beside the encoder, so
the first Arrow read of 1M rows took 3.1 s (service CPU 2.4 s) where the encoder took 1.2 s. Fixed
(\`test/service/engine/arrowProgress.test.ts\`), each page is served as soon as its chunk is written:
1.0-1.3 s (CPU 0.8-1.0 s). The Arrow scan also no longer forces a full collection every 100 DuckDB
chunks (20-90 ms each on the service's heap): its own buffers make V8 collect incrementally at
about that pace (first Arrow read of 4M rows: 6.5 s against 8.4 s, the service's RSS while read 297
MB against 285 MB). The JSON and CSV encoder fetches DuckDB's next chunk while it splits one (DuckDB
renders it meanwhile; the JSON encoder alone on 1M rows: 1.4-1.6 s against 1.8-3.6 s, load 9-12),
and writes its buffers out early only once they hold all of a waiting reader's rows (33 early writes
for 1M rows instead of 490). No page waits for an fsync: each format is synced once, before its
info.json. The quickstart at 5M rows in a reused folder (\`/usr/bin/time -v\`, load 9-12, two runs
each): 0:50 / 0:53 before, 0:42 / 0:42 after the Arrow fixes (CPU 22.2 / 22.2 s against 16.6 / 19.1 s; peak RSS
423 / 404 MB against 427 / 440 MB). The JSON first read stays near its encoder's time, and 0.5x
\`JSON.parse\` is out of its reach: DuckDB's rendering of the JSON rows alone is 0.86 s of CPU for
1M rows, the encoder 1.5 s, \`JSON.parse\` of the same 153 MB 1.6-2.3 s. The text of \`timestamp
with time zone\` is not the largest part: 0.24 s of CPU of about 0.75 s for the 8 columns (each
rendered alone, aggregated), and a cheaper guard for years before 1 (a comparison for \`year()\`)
was no faster. Tried and not kept: no forced collection in the JSON encoder (5M rows: no CPU saved,
18 MB more RSS); no look on disk for a format being written (a read racing its result's expiry then
answered COMPLETED where EXPIRED was due). The \`firstread\` bench before and after, each run once
on the shared machine: before (load 9-11) the first JSON read 1.98x \`JSON.parse\` and the first
Arrow read 1.91x as fast as JSON (on a quiet machine, load 3-4: 1.39x and 2.63x); after, 2.29x and
6.37x (load 6-10), and 2.15x and 5.64x (load 10-16, the run in the table).

"The image's memory settings" are the Dockerfile's \`NODE_OPTIONS=--max-semi-space-size=8\` and
\`MALLOC_MMAP_THRESHOLD_=131072\` ([operations.md](operations.md#memory)).

The soak (\`npm run bench -- soak\`, \`SOAK_MINUTES\` long, 4 by default; \`SOAK_SPEED\` the
schedule's clock, x20 by default; \`SOAK_ONLY=schedule\` or \`serve\` watches one process alone)
samples each process's RSS, open descriptors, data folder on disk and the execution records its
service keeps every 5 s (and every 30 s the RSS split by mapping from \`/proc/PID/smaps\`: V8's
256 KiB pages, glibc's arenas, mapped files, the rest) and prints, for each, the medians of the
run's thirds (the first is the warm-up) and the slope over the last two thirds with its standard
error, saying whether it is 0 within two of them. RSS swings by tens of MiB from one sample to the
next with the run in flight, so over minutes a slope of tens of MiB an hour is within its error;
what tells a plateau from a climb is the medians of the last two thirds and a slope within twice
its error. Disk and records are held by the retentions the soak sets (results 60 s, their records
120 s more: an execution is held some 185 s, which the first third must cover, and the bench says
so when it does not); it prints the pace of each third and the records the retentions hold at
that pace beside the count. \`serve\` is given an execution and its page read at a steady pace
(\`SOAK_SERVE_PERIOD_MS\`, one started every 500 ms), so that what it holds does not follow the
machine's load; the schedule's lines also split the main thread's memory and give the service
thread's V8 heap.

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

What grows was then looked for inside the schedule process (2026-12-02, 2 cores shared, load
17-45): heap snapshots of both threads 4 and 15 minutes into a soak (300 runs apart), and every
30 s to 5 minutes over 21 minutes and 448 runs each thread's heap, DuckDB's memory per instance
(\`duckdb_memory()\`) and glibc's totals (\`malloc_stats()\`):

- The main thread's live objects are the same from run to run (+0.7 MiB between the snapshots, all
  compiled code and its feedback; heap used 33 -> 35 MiB). The service thread's grew by its
  execution records only (\`Executions\`' map of records and its set of dropped results, about
  0.4 KB a record): until then the soak's settings kept them the service's default 7 days, so
  every execution of the run stayed in memory (and on disk). The soak now forgets them 120 s after
  their result expired (\`SOAK_RECORD_RETENTION_S\`), as the embedded default does after 2 days, and
  prints their count, which levels off.
- V8 keeps its old generation's pages sized to the allocation rate: the main thread's heap total
  rose 36 -> 55 MiB while 33-35 MiB were used (the service thread's 31 -> 35 MiB, 24-26 used).
- DuckDB held 1-8 MiB per instance between runs; malloc 77-81 MB from the system in 14 arenas,
  41-57 MB of it in use, flat; \`malloc_trim(0)\` at the end gave back 11 MiB (held free, not lost).
- Creating, using and closing a DuckDB instance as each native export does (400 times in a loop)
  leaves RSS flat (98-99 MiB).

So nothing a run makes is kept. With the records' retention compressed, a 70-minute soak
(2026-12-02, 668 snapshot runs beside 3,109 \`serve\` executions; load 14.8 at the start, 18-45
during it from other work, 9.7 at the end) still did not show RSS flat: the schedule's medians
307 / 316 / 326 MiB, slope 24.5 ± 4.2 MiB/h after warm-up; \`serve\`'s 212 / 215 / 218 MiB,
11.2 ± 0.6 MiB/h; descriptors 47 / 47 / 48 and 33 / 33 / 35; the records held at 64-75 and
112-142 (at most 115 and 280), disk at most 266 and 151 MiB. The errors assume independent
samples (5 s apart, they are not), and the load fell over the last third, when more runs were
done (records and disk rose with them). What rose is V8's pages (256 KiB mappings: 96 MiB of the
schedule's RSS at the end, the two heaps' totals) above heaps whose live objects stay flat (heap
snapshots of \`serve\` 520 executions apart: +0.9 MiB, compiled code). Whether that room levels off
is not shown yet: at x20 the process is never idle, so V8's memory reducer, which shrinks the heap
of a process that stops allocating (a real every-minute schedule between its runs), never runs.
At a real pace the schedule's RSS is flat. Two soaks at clock x2 (each every-minute job every
30 s, so the process is idle between runs as a real schedule is), on 2026-12-02, 2 cores shared by
other work:

| soak at clock x2 | load | \`schedule\`: RSS (thirds), slope after warm-up | \`serve\`: RSS (thirds), slope after warm-up; last third | records (thirds) against what the retentions hold at the pace |
|---|---|---|---|---|
| 60 min, \`serve\` pausing 250 ms after each request | 5.8 falling to 1.7 | 245 / 252 / 253 MiB, 0.6 ± 2.2 MiB/h: 0 | 221 / 227 / 234 MiB, 17.6 ± 0.5 MiB/h: not 0; 7.0 ± 1.2 | \`serve\` 344 / 374 / 415, rising with its pace as the load fell |
| 55 min, \`serve\` at a steady pace (one started every 500 ms) | 9.6, 7.2-22.4 during, 9.9 | 252 / 256 / 258 MiB, 4.4 ± 3.2 MiB/h: 0 | 219 / 225 / 226 MiB, 5.0 ± 0.7 MiB/h: not 0; 3.1 ± 2.2: 0 | \`serve\` 318 / 308 / 274 against 314 / 311 / 276; schedule 12 / 12 / 12 against 12 |

- **The records are swept as the retentions say**: their count is, within 1 %, the pace times the
  time an execution is held (running, 60 s with its result, 120 s as a record, half a 5 s sweep).
  The \`serve\` records that rose over the first hour-long run followed its pace: \`serve\` paused
  250 ms after each request, so it ran more executions as the machine's load fell. At a steady
  pace (a 12-minute \`SOAK_ONLY=serve\` run, load 5-10) they held at 336 / 347 against 335 / 344,
  descriptors 39 / 39 / 39 by every kind, disk 149 / 144 / 150 MiB. In the 55-minute run the load
  (up to 22) slowed \`serve\` below its pace (2,084 of 5,436 executions started late), and its
  records, disk and open results fell with it.
- **The schedule at x2**: RSS, descriptors (33 / 33 / 33), disk (36 MiB, at most 51) and records
  flat within their errors; V8's pages 65 / 67 / 68 MiB, arenas 33 / 35 / 36 MiB, heaps used flat
  (main thread 31 -> 32 MiB, service thread 25 MiB). The 24.5 MiB/h at x20 is a process never idle.
- **\`serve\`'s slope** is its arenas: V8's pages 54 / 54 / 54 MiB, files and the rest flat,
  glibc's arenas 36 / 41 / 42 MiB (12-minute run: 40 / 42 / 44). Each arena keeps the high-water
  mark of what its threads allocated, up to 8 per core: bounded, but the last of them were still
  being met in the second third; over the last third the slope is 0 within its errors.

The append job's manifest, which lists every part file of its
output (about 250 bytes each), is read and rewritten by each run: it grows with the output, not
with the process ([operations.md](operations.md#what-grows-and-what-bounds-it)).

## Part threads (\`workers\`): measured, then removed

Part threads wrote an output's parts side by side, each part read, decoded and encoded by a worker
thread. Measured on 2026-12-02 with the service in a process of its own pinned to core 1 (\`taskset
-c 1\`, 1M rows of \`sample.events\`, its encodings settled first) and the export (the \`parallel\`
bench's export case, compiled, zstd Parquet, 4 parts of 250,000 rows) pinned to core 0 or left on
both cores, \`workers: 1\` and \`2\` alternating, three rounds. Wall seconds, CPU seconds of the
export process (every thread), peak RSS, with the load average (1 min) when each case ended; the
first round ran on a quiet machine, the other two beside other sessions:

| Wire | Export on | Round (load) | \`workers: 1\` | \`workers: 2\` | 2 against 1 |
|---|---|---|---|---|---|
| JSON | core 0 | 1 (2.1-2.5) | 3.24 s; CPU 3.16 s; 286 MB | 5.87 s; CPU 4.75 s; 484 MB | 0.55x |
| JSON | cores 0,1 | 1 (2.8-3.8) | 5.70 s; CPU 2.99 s; 277 MB | 8.09 s; CPU 4.80 s; 478 MB | 0.70x |
| Arrow | core 0 | 1 (3.8-4.0) | 1.86 s; CPU 1.40 s; 248 MB | 3.33 s; CPU 2.57 s; 358 MB | 0.56x |
| Arrow | cores 0,1 | 1 (4.4-5.2) | 1.69 s; CPU 1.37 s; 224 MB | 4.00 s; CPU 2.53 s; 345 MB | 0.42x |
| JSON | core 0 | 2 (6.0-8.3) | 10.53 s; CPU 4.17 s; 270 MB | 19.97 s; CPU 6.95 s; 426 MB | 0.53x |
| JSON | cores 0,1 | 2 (9.6-10.8) | 12.96 s; CPU 4.21 s; 274 MB | 15.72 s; CPU 6.68 s; 476 MB | 0.82x |
| Arrow | core 0 | 2 (11.0-13.5) | 3.70 s; CPU 1.53 s; 230 MB | 10.77 s; CPU 3.01 s; 340 MB | 0.34x |
| Arrow | cores 0,1 | 2 (16.9-18.5) | 10.55 s; CPU 1.55 s; 223 MB | 5.89 s; CPU 2.17 s; 368 MB | 1.79x |
| JSON | core 0 | 3 (19.9-20.6) | 12.90 s; CPU 3.72 s; 275 MB | 17.34 s; CPU 5.70 s; 483 MB | 0.74x |
| JSON | cores 0,1 | 3 (21.3-22.0) | 10.68 s; CPU 3.27 s; 260 MB | 17.74 s; CPU 5.69 s; 431 MB | 0.60x |
| Arrow | core 0 | 3 (21.8-22.1) | 3.46 s; CPU 1.26 s; 245 MB | 5.08 s; CPU 2.31 s; 357 MB | 0.68x |
| Arrow | cores 0,1 | 3 (21.1-21.8) | 4.77 s; CPU 1.41 s; 220 MB | 5.79 s; CPU 2.18 s; 357 MB | 0.82x |

A second thread was slower in 11 cases of 12, on the quiet machine by 1.4 to 2.4 times; the one
gain (Arrow, both cores, load 17-18) is a one-thread run that waited for a core (1.55 s of CPU in
10.55 s). Every case took 1.4 to 2.0 times the CPU and 100-210 MB more peak RSS. The earlier
rounds (2026-12-01: 0.78x and 0.82x at load 2.9, 1.10x and 0.59x at load 22; 30-45 % more CPU
pinned at load 23-40) found the same. So part threads, like the decode threads before them, were
removed: \`workers\` (a job's, \`--workers\`, \`writeExport\`'s option) is accepted and ignored with a
warning, and the files are those one thread wrote anyway. For more cores, a run is sharded
(\`sluice run --processes N\`, [operations.md](operations.md)): each shard a process of its own.

## The async channel

The export's encoders, the quarantine feed and the run's split of one read into its outputs
(\`tee\`) hand items over through one channel (src/export/channel.ts). Against the platform's
WHATWG \`TransformStream\` (which also runs one item further ahead of its reader), 200,000 numbers
pushed and read one by one, median of five (2026-12-02, 2 cores, load 27): the channel 2.5 us per
item as a hand-off and 3.3 us with room for two, the hand-off channel it replaced 3.6 us, a
\`TransformStream\` 18 us. Items are batches of rows, so any of them is noise beside the batch;
the channel is our own for its semantics (a push resolves when taken; a failure after what was
pushed; an abort at once).

## The native export: DuckDB's threads, with the service on another core

The \`wire\` bench runs the service on the same two cores as the export. To see what a second
DuckDB thread buys once the service is elsewhere, the service (1M rows of \`sample.events\`) ran
pinned to core 1 (\`taskset -c 1\`) and the native export over CSV pages (zstd Parquet, 4 parts of
250,000 rows, run from the TypeScript sources) pinned to core 0 or to both cores, with 1 and 2
DuckDB threads, twice per case (2026-12-02, 2 cores, load average 30-33: the machine was shared by
seven sessions). Wall seconds, CPU seconds (user + system, every thread) and peak RSS:

| Export on | 1 DuckDB thread | 2 DuckDB threads |
|---|---|---|
| core 0 | 25.9 / 21.3 s; CPU 4.1 / 3.4 s; 286 / 261 MB | 31.2 / 32.9 s; CPU 4.5 / 4.6 s; 261 / 278 MB |
| cores 0,1 | 39.8 / 30.4 s; CPU 4.1 / 3.4 s; 280 / 279 MB | 25.8 / 15.0 s; CPU 4.2 / 3.6 s; 282 / 267 MB |

At that load the wall times are 4 to 10 times the CPU times and say little
about parallel work: on both cores the second thread finished 1.5-2x sooner, which is as much a
larger share of a contended machine as parallel work; on one core it finished later and took
10-35 % more CPU. What holds: a second DuckDB thread costs little CPU where it has a core of its
own (3-5 %) and no memory; the default stays one per core but one (the export's own thread
fetches and stages the pages). Of the CPU an export of 1M rows takes over CSV pages (some 3.5 s),
DuckDB's statement is about 1.4 s (read, casts, checks, Parquet), the export's own thread about
0.9 s (HTTP, staging), V8's collector some 0.5 s (freeing the page buffers: with
\`--single-threaded-gc\` the main thread takes 0.5 s more), and the rest staging and the output's
copy and checksum. For comparison, DuckDB's own COPY of the same rows from a table takes 0.3-0.6 s
of wall time on the same machine at load 9-10, and a bare download of the same CSV pages from the
service on loopback 0.3-0.5 s: the export's 3.5-4.5 s there are the client's CPU.

The native path against the general one, from the compiled package, the export pinned to core 0
and the service to core 1, three rounds alternating (2026-12-02, load 13-18; wall seconds, then
CPU seconds of the whole process and of its main thread): over CSV pages 13.0 / 12.3 / 13.9 s, CPU
3.73 / 3.64 / 3.78 s (main 1.0 s); the general path over JSON pages 11.7 / 12.1 / 14.5 s, CPU
4.01 / 3.36 / 3.96 s (main 2.0-2.4 s); natively over JSON pages 12.9 / 19.0 / 17.5 s, CPU 4.48 /
4.66 / 4.00 s (main 1.1-1.2 s). On one core the native path is not faster than the general one
today: DuckDB's statement (some 1.4 s) costs about what the JS decoders and parquet-wasm cost on
the main thread, and in both some 1.3 s go to threads that are neither (V8's collector freeing the
page buffers, staging, the output's copy and checksum). Its gains are where a second core is
free (DuckDB writes a part while the main thread fetches the next) and on the main thread, which
it leaves mostly idle. At load 9-10, on both cores (the service pinned to core 1), two
rounds: over CSV pages 4.55 / 4.07 s (2 DuckDB threads 4.45 / 3.65 s), the general path 4.16 /
3.39 s, DuckDB's COPY 0.26-0.59 s.

### CSV pages in zstd, handed to DuckDB as received

Profiled (2026-12-02, 2 cores, load 15-25; CPU of every thread of the export process, 1M rows of
\`sample.events\`, zstd Parquet in 4 parts, run from the sources against a service whose result
was encoded and whose frames were stored): over uncompressed CSV pages the export took 3.3-3.6 s
of CPU: the main thread 0.85 s, libuv's threads 1.8 s (DuckDB's statement, some 1.05 s of it, and
the writes), and V8's helper threads 1.3 s: 21 full collections of a 30 MB heap, each asked for
by the 85 MB of page bodies (and as much again of 64 KB chunks) passing through JS. DuckDB's CSV
reader reads the same pages in zstd at the CPU it reads them plain (1.05-1.08 s against 1.03-1.07 s,
one thread; gzip 1.20-1.22 s), and the zstd pages are 18 MB, not 85. Asked for in zstd and staged
as received, the export took 2.0-2.2 s of CPU (V8's helpers 0.5 s, 4 full collections); in one
\`wire\` run (load 38.6) 2.63 s against 3.74 s over uncompressed pages: 30 % less. A body so staged
is walked block by block first (some 20 block headers per page, no decoding): DuckDB reads the
blocks a cut stream has and writes a part short of rows without an error (a page one byte short
lost its last block, 382 of 31,250 rows), and it reads a gzip page cut short of its trailer as whole; gzip
pages are therefore decoded by the client, as before.

Measured and not kept, or not taken: the response body streamed to its staging file chunk by
chunk (85 MB fetched and staged: 0.39 s of CPU against 0.36 s buffered and written once; the zstd
bodies leave little to save); reading integers, decimals and booleans typed by DuckDB's CSV reader
instead of as text checked by a pattern (about the same CPU, 0.96-1.12 s against 1.05 s, and not
exact: it reads \`1.5\` as 2 in a bigint column, \`1e3\`, \`0x10\`, \`1_000\` and \` 12\` as integers,
\`1.005\` as 1.01 in a decimal(3, 2) and \`yes\` as true). Fewer statements are already the rule (one
COPY per part over all its pages). What remains of the export's CPU is DuckDB's statement (about
1.1 s, some three times COPY's from a table: parsing the text, the checks and casts, Parquet of
text-read columns) and, before any part, the stream's first page (JSON, parsed whole to learn the
columns and the page size: 0.2-0.3 s). At load 38 every wall time of the run is the machine's,
not the export's (COPY itself took 1.96 s there, 0.3 s on a quiet machine); the 3x target is not
met: with DuckDB's own statement at some 3x COPY's CPU, it needs DuckDB's second thread on a core
of its own, which the bench's service shares.

### The native export over a 100 Mbit/s link

The native export over a 100 Mbit/s link with a 50 ms round trip (the \`wire\` bench's link row,
bench/linkProxy.ts: one link's bandwidth shared by every connection through it, as on a real link;
the bare download and the export both keep 4 requests in flight) was 4.05x the bare download
because each part's read, ending at the part's last row, took that end for a too-low total and
followed \`next_offset\` to the end of the result, one request at a time: an export of four parts
fetched 2.5x the result's bytes (46.8 MB against 18.5 MB on the link, counted by the proxy). Each
part now asks for the pages holding its rows only (19.1 MB: the CSV pages and the first JSON page
the stream reads for the result's columns). The same fix took the export's CPU on loopback from
3.5-4.1 s to 2.5-2.8 s (two \`wire\` runs at load 18-32, pages staged as text; the link row is
the second of them). What is left of the gap is the client's CPU, not
the link: the 18.5 MB of pages take 1.5 s at 100 Mbit/s, and the export's 2.5-2.8 s of CPU (DuckDB's
statement, HTTP and zstd, staging) share two cores with the service and the link's proxy.

Then the export's own timeline (the bench prints it: when the stream's first page was read for the
columns, when the CSV pages came in, how long after the last page it ended) showed the link idle
for want of requests. Each part read its own pages, so the 4 requests drained at the end of a
part and ramped up again for the next (some 0.1 s per boundary at 50 ms), and a page holding rows
of two parts was fetched twice; and the range reads held no page beyond the 4 in flight, so a page
done before the one at the cursor held its request's place until that one came (pages come in out
of order on a link most of the time). Parts that follow each other are now one ordered stream of
pages cut at the parts' boundaries (src/pipeline/nativeWire/nativeParts.ts) with the stream's
prefetch (2 pages) beside the 4 requests; the pages run ahead of DuckDB's writes by one part
waiting on disk, so a part DuckDB writes more slowly than the link brings the next no longer stops
the link; and the range reads go over the stream's own client, whose connections are open. Old and
new code alternating in one harness at load 9-15 (bare download 1.59-1.77 s): the time from the
columns to the last page went from 2.1-3.3 s to 1.9-2.3 s, 1.8-2.1 s with the prefetch; in the
\`wire\` run of the table's row (load 9), 1.69 s against 1.62 s for the bare download, the export
1.68x the download with 0.39 s before its first page request and 0.63 s after its last page (the
row was 2.89x in a run of the code before at load 10, 1.57x on the quiet machine of the morning).

The first CSV pages then waited for the stream's first page (status and the first JSON page,
read for the columns and the page size: two round trips, 0.6 MB and its parse; 0.23-0.45 s at load
5-11), which the CSV pages do not need. They are now asked for with it
(src/pipeline/nativeWire/csvHead.ts, as a job run with an output that may be written natively does):
the first CSV page at once, and, once it tells where the next page starts, the pages after it up to
the 4 requests in flight. Old and new order alternating in one harness (1M rows, load 6, 4 runs
each): the first CSV page request went from just after the columns (known at 0.24-0.32 s) to
0.00 s, the last page came in at
1.77-1.82 s instead of 1.87-2.65 s, the export took 2.25-2.39 s instead of 2.65-3.11 s.
In the \`wire\` run of the table's row (load 6), the first CSV page request at 0.01 s, the columns
known at 0.28 s, the pages in from 0.31 to 1.75 s (1.74 s after the first request, against 1.59 s
for the bare download), the export 0.39 s after its last page: 1.35x the download (the row was
1.68x at load 9 before; a run of the same code at load 9-14 was 1.68x too, the columns known at
0.43 s and the first CSV page in at 0.46 s: under load the first JSON page and the first CSV pages
share the service's and the client's CPU, and a single run's ratio moves with the load more than
with this change).

What is left are the two ends of the export, both CPU on this machine: at the start, the first
JSON page shares the link and the service with the first CSV pages (the first CSV page comes in
just after the columns are known); after the last page, that page's part written by DuckDB
(one COPY of 250,000 rows, some 0.25 s of CPU) and, where DuckDB fell behind the link, the parts
still waiting. With a link time of 1.6 s that floor is some 2.1 s, about 1.3x, on a quiet machine
(an estimate from the parts, not measured: the machine was not quiet); under load the export is
bound by DuckDB's CPU (about 1 s per 1M rows for read_csv and the Parquet writer: the checks and
casts are a small part of it, the same statement reading the pages as text costs as much), not by
the link.

Tried for the two ends and not kept: every core for DuckDB once the last part's pages are in (the
same bytes; one part's COPY with two threads took 20-90 % more CPU and longer at load 7-10, as two
threads throughout did); staging a part's pages into a DuckDB table as they arrive, so that only
the last page and the Parquet writer are left after the link, because the file DuckDB then writes
depends on how the pages were grouped into statements (three different files for the same rows in
four groupings) and differs from the file one COPY writes: resumed and fresh exports would not
write the same bytes.

DuckDB now writes a part as soon as it has written the one before, not once the caller has stored it
(the file copied to its destination and hashed, the journal written: 10-160 ms a part at load 9):
the stores run beside the next statement, and the last part's statement waits for none of them. Over
the 100 Mbit/s link (the link case of \`wire\`), eight runs each alternated with the code before at
load 6.7-9.5, a bare download before each: the time after the last page 0.51-1.84 s against
0.67-3.53 s (medians about 1.1 and 1.5 s), the export 1.46-1.84x the bare download against
1.58-2.27x in the four runs timed against one; at load 2-4, where DuckDB keeps up with the link, no
difference (\`BENCH_WIRE_LINK=3\` alternated, medians 1.39 and 1.42x against 1.46 and 1.40x); the same
CPU, and the same peak RSS (the 5M-row export on loopback 281-302 MB against 270-303 MB, three runs
each at load 4-9: at this load both touch the 300 MB bound).

Tried for the tail and not kept: a part's CSV pages fed to DuckDB through a named pipe as they come
in (one COPY per part reading a FIFO that the client writes the part's rows into, decoded from zstd,
header lines after the first dropped), so that the statement ends shortly after the part's last
page. DuckDB reads a pipe as it reads a file of the same text (the Parquet bytes the same whatever
the page size and the pages' timing, with \`buffer_size\` at 2 MB: its default, 32 MB, is filled from
the pipe before any of it is parsed, so a whole part was read before its statement started working)
and opens no FIFO as compressed, so the client decodes the zstd pages. At load 5-10 on 2 cores it
gained no time over the link (DuckDB, starved, fell behind the pages as before), cost 0.3-0.45 s
more client CPU per 1M rows (the decoding, and the garbage of 85 MB of text: decoding each page as a
stream of 64 KB pieces halved that), and raised the peak RSS of the 5M-row export to 337 and 342 MB,
against 259-303 MB without it (DuckDB's statements, each reading its pipe on whichever libuv thread,
keep memory per thread: the same 20 statements on a threadpool of one thread peaked 40 MB lower),
over the 300 MB bound. DuckDB's \`allocator_flush_threshold\` at 1 MB brought that peak back (281 MB)
but the 5M-row export on loopback then took 1.34x the time and 1.38x the CPU. On a quieter machine
(load 0.5-2, the link case of \`wire\`, three pairs of three runs) the pipe gave medians of 1.36, 1.39
and 1.40x the bare download against 1.51, 1.47 and 1.39x, the time after the last page 0.34-0.49 s
against 0.34-0.60 s, for 0.3-0.4 s more CPU: not the 0.1-0.15 s after the last page it was for. What
stays after the last page whatever reads the pages: the part's last full row group (its rows 122,880
to 245,760 end in the part's last page) encoded, the rest of the part and the footer, the store and
the commit.

Over CSV pages DuckDB now writes two parts at once, each on a connection of its own, a part as
soon as its pages are in (\`defaultStatements\` in src/pipeline/nativeWire/nativeEngine.ts): on a
link that brings a part in about the time one statement writes it, DuckDB no longer falls behind
(traced at load 3 before: the last part's COPY started 0.2 s after its last page, the part before
still being written). Two statements on two connections of one thread each run side by side (two
parts in 0.35 s against 0.67 s one after the other, the same CPU, the same files: a test compares
them with one connection's). Over JSON pages DuckDB keeps one statement at a time: two at once
peaked at 291-317 MB for 1M rows against 281-298 MB. The link case, three alternated rounds of two
runs at load 1.9-3.4: the code before 1.29-1.58x the bare download (0.37-0.67 s after the last
page), the last part only beside the one before 1.25-1.40x (0.34-0.56 s), every part 1.27-1.37x
(0.34-0.37 s). On loopback (the \`wire\` run of the table, load 1.7-3.0) the export over CSV pages
took 1.02 s (5.82x \`COPY\`) against 1.87 s (9.99x, load 1.2) in the morning's run; its 5M-row
export peaked at 269 MB.

The last part, the export's tail, runs on more of DuckDB's threads (\`tailSettings\`: one per core
up to 4, and 32 MB more memory per thread beyond the first; only when the caller set neither): its
pages are in, the link and the service idle. DuckDB's CSV reader reads the part's page files side by
side, the same bytes as one thread (sha256 compared; a test too); a 250,000-row part of
sample.events took 0.20-0.21 s with two threads against 0.30 s with one. Its Parquet writer runs
threads only as its memory limit allows: at the export's 128 MB two threads ran as one (0.30-0.33
s), from 160 MB as two (0.20 s at 160, 192 and 256 MB), which is why an earlier trial with
\`SET threads = 2\` alone found no gain. The link case, two alternated rounds of two runs at load
0.8-1.1: 1.29-1.39x the bare download and 0.36-0.40 s after the last page before, 1.22-1.34x and
0.27-0.31 s after; peak RSS on loopback the same (1M rows 278-288 MB, 5M rows 280-296 MB, both
versions run from the sources).

Tried for the tail and not kept: the last part read by DuckDB as its pages come in (with the last
part only beside the one before).
Its statement started with its first page and read one named pipe per page, in the page grid's
order, each page written into its pipe decoded once in (DuckDB reads no zstd from a pipe); its pages
were staged as always, and any page not where the grid said, failed statement or other row count
fell back to the statement over the staged pages. One pipe per page, not one per part, keeps the
bytes: DuckDB reads each pipe as it reads the page's file, its chunks ending where each page ends,
so its row groups are cut where the statement over the staged pages cuts them (a 250,000-row part:
row groups of 124,470, 122,952 and 2,578 rows, the same sha256 both ways; a 1M-row export over the
link and on loopback wrote the old code's four files byte for byte). Traced (load 3), DuckDB read
the last part's pages beside the part before's COPY, the service and the link on 2 cores at some
45 ms a page and ended 0.3-0.4 s after the last page all the same. Over the link, 24 runs: medians
1.46x and 0.48 s after the last page (0.29-1.65 s), no better than the last part only written
beside the one before; on loopback 4-8 % more CPU (1.92-2.10 s against 1.77-1.89 s: the pages
decoded into the pipes) and 20-40 MB more peak RSS. At this load the tail is DuckDB's CPU: the part
before's COPY and the last part's need some 0.66 s of CPU in the last 0.4 s of the link, on cores
the service, the link and the client share. On a quiet machine the stream would leave the last page
and the last row group (some 0.1 s) after the link, against the last part's whole statement (0.3
s); that was not measurable here.

Where the rest of the link case's time goes, traced with the link proxy (each piece it carried, and
when the link stood idle) on a quiet machine (load 0.5-1.7): the export carries the bare download's
18.5 MB and the first JSON page's 0.57 MB (the columns, the total and the page grid; 0.05 s of the
link), and the link stands idle 1-113 ms in a run (most often some 50 ms): once at the start, while
the first CSV pages after the first go out over new connections, and, now and then, once in the
middle, when the page at the head of the ordered window takes six times as long as the others (the
link shares its bandwidth unevenly) and the pages done behind it fill the window. The last page is
in 1.67-1.85 s after the first request (bare download: 1.53-1.63 s); the client has it within 3 ms
of the proxy delivering it. What follows is the last part's statement and store, 0.21-0.30 s. Each
of these was tried against the code before, alternated, eight link runs a side, and changed no
median beyond the runs' spread: the first CSV pages all asked for at once (the page grid given, an
upper bound of any earlier start: medians 1.30 and 1.38x against 1.32 and 1.33x); a window of 12
pages instead of 6 (1.28 and 1.32x against 1.31 and 1.32x); the proxy's and the service's processes
at a higher priority (\`renice -10\`: no change, so neither is starved by the client's CPU); and the
last part's pages inserted into a DuckDB table as they come in, one statement per page with the
part's typed columns and checks, so that after the last page only its insert and a \`COPY\` of the
table are left (a \`COPY\` of the table: 0.05-0.09 s against 0.20 s for the part's statement; the same
bytes whatever the threads; 20 % more of DuckDB's CPU for the part). The inserts, 40-50 ms a page on
one thread beside the part before's statement, fell behind pages that come in some 45 ms apart and in
bursts: two or three were still to run at the last page, the file written 0.17 s after it; the link
case 1.30 and 1.34x against 1.30 and 1.29x without (every part so: no better). Not kept.

The bench now reads the same pages on disk two ways each (\`readerFloor\` in bench/readerFloor.ts;
four runs at load 0.8-3.5, the JSON pages' checked statement in the last two): DuckDB's plainest typed
\`read_csv\` of the CSV pages to zstd Parquet, 2.37-2.65x \`COPY\`'s time with two threads
(4.24-4.90x with one); the native path's own statement over the same files (every column read as
text, checked and cast: \`pagesSelect\` in src/pipeline/nativeWire/duckdbColumns.ts), 3.06-3.59x
with two threads (5.66-6.24x with one; its CPU 1.2-1.3x the plain read's); \`read_json\` of the JSON
pages' rows arrays, typed and unchecked, 2.65-2.91x with two threads (4.85-5.46x with one), and the
native path's statement over them 3.82-3.85x (6.73-7.21x). So the export's own statement, with nothing
fetched, staged or stored and the service idle, is already at or past 3x \`COPY\` on this machine;
over JSON pages a reader with no checks at all leaves a 3x target 0.1-0.35x of \`COPY\` for the
rest. The checks are what exactness costs: read typed, DuckDB's CSV reader rounds \`1.5\` into a
bigint and takes \`0x10\`, \`1_000\` and \`yes\`; reading the checked columns as text costs as much
as the checks and casts together (the same statement with every column read as text and nothing
cast: the same CPU), and a cheaper-looking check (\`ltrim\` of the digits against the regular
expression) cost 1.6x the statement.

On loopback, where every page is in within 0.3 s, the last part's two threads cost time: its
statement starts with the part before's and three threads share two cores (the export with DuckDB's
threads set to 1, which keeps the tail on one thread too, 0.96-1.06 s against 1.04-1.18 s by
default in the three runs). Over the link the part before is nearly done when the last part starts,
and the tail's threads take some 0.1 s off it. The threads are chosen when the statement starts,
before it is known when the part before will end; what tells the two apart is whether the last part
waited for a connection (DuckDB behind the pages, both connections busy). It now keeps one thread
then. Loopback, five runs alternated with the code before (load 1-2): 0.99-1.03 s (median 1.01 s)
and 1.73-1.77 s of CPU, against 1.03-1.46 s (1.07 s) and 1.77-1.89 s; peak RSS 268-288 against
278-293 MB. The link case, two rounds of eight runs a side at load 1.3-2.2: medians 1.32 and 1.33x
against 1.27 and 1.31x, the time after the last page 0.23-0.28 s both ways (where DuckDB keeps up
with the link the last part does not wait, and nothing changes; the medians differ by less than
the runs' spread).

What was tried for the native path and not kept: CSV pages with DuckDB casting \` UTC\` timestamps
itself (its cast of zoned text goes through ICU, five times the cost of the rest of the column);
\`strptime\` for them (twice the cost of cutting \` UTC\` and casting the wall clock); a smaller
DuckDB memory limit (64 MB, 32 MB: no lower peak, 32 MB fails the Parquet writer) and a smaller
CSV buffer (no lower peak); smaller row groups lower the peak (61,440 rows: -20 MB) but change the
files, whose row groups are the output's \`row_group_size\`. Kept: CSV pages (half the bytes of
JSON ones, and DuckDB reads them at half the CPU, casts included about the same), the casts of
dates and timestamps computed once below the checks (-20 % of DuckDB's CPU), and DuckDB handing
back what it frees past 16 MB (-40 MB of peak over a long export).
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
