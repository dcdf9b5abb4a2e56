import { resolve } from 'node:path';
import { builtins } from '../../../connectors/index.ts';
import { DEFAULT_STATE_DIR } from '../../config/jobSchema.ts';
import { loadJobFile } from '../../config/loadJobFile.ts';
import { RunHistory, type RunRecord } from '../../jobs/run/runHistory.ts';
import { defineCommand, flag, stringOption } from '../command.ts';
import { EXIT } from '../exitCodes.ts';
import { writeOut } from '../io.ts';
import { toJson } from '../output/json.ts';
import { formatBytes } from '../output/summary.ts';
import { renderTable } from '../output/table.ts';
import { fmtDuration } from '../progress.ts';
import { UsageError } from '../usageError.ts';

const DEFAULT_LAST = 20;

export const runsCommand = defineCommand({
  name: 'runs',
  summary: 'List the recorded runs of jobs (all jobs, or JOB), newest last',
  args: '[JOB]',
  maxArgs: 1,
  options: {
    file: { type: 'string', short: 'f', valueName: 'FILE', description: "List the runs of this job file's jobs, from its state_dir (other job files may share that folder)" },
    'state-dir': { type: 'string', valueName: 'DIR', description: `State directory holding the history (default: the job file's state_dir, else ${DEFAULT_STATE_DIR})` },
    last: { type: 'string', valueName: 'N', description: `How many runs to list (default ${DEFAULT_LAST}; 0 = all)` },
    json: { type: 'boolean', description: 'Print the runs as a JSON array' },
  },
  details: [
    'Every run of `sluice run` and `sluice schedule` appends one record to history.jsonl in the',
    "job file's state_dir: start, end, outcome, error, execution, rows, bytes, credits (and what was",
    'left in the cycle), cursor range and outputs. The history is rotated past 1 MiB (one old generation kept).',
  ].join('\n'),
  async run({ io, values, positionals }) {
    const lastText = stringOption(values, 'last');
    if (lastText !== undefined && !/^\d+$/.test(lastText)) throw new UsageError(`--last must be a whole number of runs, got ${JSON.stringify(lastText)}`);
    const last = lastText === undefined ? DEFAULT_LAST : Number(lastText);
    const { stateDir, jobs } = await historyOf(values, io);
    const job = positionals[0];
    if (job !== undefined && jobs !== undefined && !jobs.includes(job)) {
      throw new UsageError(`job ${JSON.stringify(job)} is not in ${String(values.file)} (its jobs: ${jobs.join(', ')})`);
    }
    const runs = await new RunHistory(stateDir).list({ ...(job === undefined ? {} : { job }), ...(jobs === undefined ? {} : { jobs }), ...(last === 0 ? {} : { last }) });
    if (flag(values, 'json')) {
      await writeOut(io.stdout, toJson(runs));
    } else if (runs.length === 0) {
      await writeOut(io.stderr, `no runs recorded${job === undefined ? '' : ` for job ${JSON.stringify(job)}`} in ${stateDir}\n`);
    } else {
      await writeOut(io.stdout, renderTable(COLUMNS, runs.map(row), 160));
    }
    return EXIT.ok;
  },
});

/** The history's folder and, with --file, the names of the file's jobs (the only ones listed). */
async function historyOf(
  values: Record<string, unknown>,
  io: { cwd: string; env: Record<string, string | undefined> },
): Promise<{ stateDir: string; jobs?: string[] }> {
  const explicit = values['state-dir'];
  const file = values.file;
  if (typeof file === 'string') {
    const jobFile = await loadJobFile(file, { registry: builtins, env: io.env, cwd: io.cwd });
    const stateDir = resolve(io.cwd, typeof explicit === 'string' ? explicit : (jobFile.state_dir ?? DEFAULT_STATE_DIR));
    return { stateDir, jobs: jobFile.jobs.map((j) => j.name) };
  }
  return { stateDir: resolve(io.cwd, typeof explicit === 'string' ? explicit : DEFAULT_STATE_DIR) };
}

/** The client's `method GET url (execution id): ` prefix: --json keeps it, the table shows what went wrong. */
const REQUEST_CONTEXT = /^\w+ (?:GET|POST|PATCH|PUT|DELETE) \S+(?: \([^)]*\))?: /;

const COLUMNS = ['started', 'job', 'outcome', 'rows', 'bytes', 'credits', 'duration', 'cursor', 'execution', 'error'];

/** `from -> to`; `to` null: the run committed no cursor (it failed, or an output holds none). */
function cursorRange(cursor: RunRecord['cursor']): string {
  if (cursor === undefined) return '';
  const from = cursor.from ?? 'start';
  if (cursor.to === null) return `${from} -> (not committed)`;
  return cursor.from === cursor.to ? `${cursor.to} (no new rows)` : `${from} -> ${cursor.to}`;
}

function row(r: RunRecord): Record<string, unknown> {
  const ms = Date.parse(r.ended_at) - Date.parse(r.started_at);
  return {
    started: r.started_at.replace(/\.\d+Z$/, 'Z'),
    job: r.job,
    outcome: r.resumed && r.outcome === 'succeeded' ? 'succeeded (resumed)' : r.outcome,
    rows: r.rows.toLocaleString('en-US'),
    bytes: formatBytes(r.bytes),
    credits: r.credits_left === undefined ? String(r.credits) : `${r.credits} (${r.credits_left.toLocaleString('en-US')} left)`,
    duration: fmtDuration(ms),
    cursor: cursorRange(r.cursor),
    execution: r.execution_id ?? '',
    error: r.error ? `${r.error.code}: ${r.error.message.replace(REQUEST_CONTEXT, '')}` : '',
  };
}
