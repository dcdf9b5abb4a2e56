import { describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { JobFileError, parseJobFile } from '../../src/config/index.ts';

const SQL = 'select * from t where day >= {{start}} and day < {{end}}';

/** The job file: `backfill:` (lines 6 on) under a job with `source` (line 3). */
function file(backfill: string, source = `{ sql: "${SQL}" }`, extra = ''): string {
  return `jobs:\n  - name: bf\n    source: ${source}\n    outputs:\n      - { format: csv, path: ./out, mode: append }\n    backfill:\n${backfill}${extra}`;
}

/** The messages the job file is rejected with. */
function messages(text: string): string[] {
  try {
    parseJobFile(text, { file: 'jobs.yaml', registry: builtins, env: {} });
  } catch (error) {
    expect(error).toBeInstanceOf(JobFileError);
    return (error as JobFileError).message.split('\n');
  }
  throw new Error('expected the job file to be rejected');
}

const range = (from: string, to: string, chunk: string, more = '') => `      parameters: { from: start, to: end }\n      from: ${from}\n      to: ${to}\n      chunk: ${chunk}\n${more}`;

describe('backfill: bad input at load, with FILE:LINE:COL', () => {
  it('accepts dates, timestamps and integers, and keeps the block as written', () => {
    const parsed = parseJobFile(file(range('2024-01-01', '2025-01-01', '7d', '      concurrency: 4\n      min_chunk: 1d\n')), { file: 'jobs.yaml', registry: builtins, env: {} });
    expect(parsed.jobs[0]!.backfill).toEqual({ parameters: { from: 'start', to: 'end' }, from: '2024-01-01', to: '2025-01-01', chunk: '7d', concurrency: 4, min_chunk: '1d' });
    expect(() => parseJobFile(file(range('"2024-01-01 00:00:00"', '"2024-01-02 06:30:00"', '6h')), { file: 'jobs.yaml', registry: builtins, env: {} })).not.toThrow();
    expect(() => parseJobFile(file(range('0', '10000000', '1000000')), { file: 'jobs.yaml', registry: builtins, env: {} })).not.toThrow();
  });

  it('from and to: not a bound, kinds that differ, an empty range', () => {
    expect(messages(file(range('yesterday', '2025-01-01', '7d')))).toEqual(['jobs.yaml:8:13 jobs[0].backfill.from: "yesterday" is neither an integer, a date (2024-01-31) nor a UTC timestamp (2024-01-31 12:00:00)']);
    expect(messages(file(range('2024-02-30', '2025-01-01', '7d')))).toEqual(['jobs.yaml:8:13 jobs[0].backfill.from: "2024-02-30" is not a date of the calendar']);
    expect(messages(file(range('1.5', '10', '1')))).toEqual(['jobs.yaml:8:13 jobs[0].backfill.from: 1.5 is not a whole number: numeric bounds are integers']);
    expect(messages(file(range('true', '10', '1')))).toEqual(['jobs.yaml:8:13 jobs[0].backfill.from: expected string, got boolean true']);
    expect(messages(file(range('0', '2025-01-01', '7d')))).toEqual(['jobs.yaml:9:11 jobs[0].backfill.to: "2025-01-01" is a date and from 0 is an integer: give both bounds of one kind']);
    expect(messages(file(range('2025-01-01', '2024-01-01', '7d')))).toEqual(['jobs.yaml:9:11 jobs[0].backfill.to: "2024-01-01" is not after from "2025-01-01": the range is [from, to)']);
  });

  it('chunk and min_chunk: units that do not fit the range, too many chunks, concurrency', () => {
    expect(messages(file(range('2024-01-01', '2025-01-01', '12h')))).toEqual([
      'jobs.yaml:10:14 jobs[0].backfill.chunk: a date range moves by whole days ("1d", "7d", "2w"), got "12h"; give timestamps as from and to bounds to cut finer',
    ]);
    expect(messages(file(range('2024-01-01', '2025-01-01', '"7 days"')))).toEqual(['jobs.yaml:10:14 jobs[0].backfill.chunk: a date range moves by a duration such as "7d", "12h", "30m" or "1w", got "7 days"']);
    expect(messages(file(range('0', '100', '7d')))).toEqual(['jobs.yaml:10:14 jobs[0].backfill.chunk: an integer range moves by a positive whole number of values (e.g. 1000000), got "7d"']);
    expect(messages(file(range('0', '100', '0')))).toEqual(['jobs.yaml:10:14 jobs[0].backfill.chunk: an integer range moves by a positive whole number of values (e.g. 1000000), got 0']);
    expect(messages(file(range('2024-01-01', '2025-01-01', '1d', '      min_chunk: 2d\n')))).toEqual(['jobs.yaml:11:18 jobs[0].backfill.min_chunk: "2d" is larger than chunk "1d"']);
    expect(messages(file(range('0', '100000000', '1')))).toEqual(['jobs.yaml:10:14 jobs[0].backfill.chunk: cuts the range into 100000000 chunks, more than 10000: take larger chunks']);
    expect(messages(file(range('0', '100', '10', '      concurrency: 0\n')))).toEqual(['jobs.yaml:11:20 jobs[0].backfill.concurrency: expected number to be >=1, got 0']);
  });

  it('parameters: not in the query, one for both bounds, set in the source too, a source that takes no range, a misspelt field', () => {
    expect(messages(file(range('0', '100', '10'), '{ sql: "select * from t where id >= {{start}}" }'))).toEqual(["jobs.yaml:7:38 jobs[0].backfill.parameters.to: the sql has no {{end}} placeholder to receive each chunk's end"]);
    expect(messages(file('      parameters: { from: start, to: start }\n      from: 0\n      to: 100\n      chunk: 10\n'))).toEqual(['jobs.yaml:7:38 jobs[0].backfill.parameters.to: the same parameter as parameters.from: each bound needs its own']);
    expect(messages(file(range('0', '100', '10'), '{ query_id: 3, parameters: { start: 1, region: eu } }'))).toEqual(['jobs.yaml:3:49 jobs[0].source.parameters.start: set by backfill.parameters on each chunk: remove it here']);
    expect(messages(file(range('0', '100', '10'), '{ latest: { query_id: 3 } }'))).toEqual(['jobs.yaml:7:7 jobs[0].backfill: needs a sql or query_id source: latest reuses a stored result, neither takes a range']);
    expect(messages(file(range('0', '100', '10', '      paramaters: {}\n')))).toEqual(['jobs.yaml:11:7 jobs[0].backfill.paramaters: unknown field, did you mean "parameters"?']);
  });

  it('overlap with incremental: the cursor goes where a chunk starts, from the backfill\'s start; no result.filters', () => {
    const sql = `{ sql: "${SQL}" }`;
    expect(messages(file(range('0', '100', '10'), sql, '    incremental: { cursor: id, parameter: end, initial: 0 }\n'))).toEqual([
      'jobs.yaml:11:43 jobs[0].incremental.parameter: a backfill\'s later runs pass the cursor where each chunk\'s first value goes: use backfill.parameters.from ("start") here',
    ]);
    expect(messages(file(range('0', '100', '10'), sql, '    incremental: { cursor: id, parameter: start, initial: 50 }\n'))).toEqual([
      'jobs.yaml:11:59 jobs[0].incremental.initial: the first run of this job is the backfill, which starts at backfill.from 0: give the same value here (the ranges would overlap or leave a gap)',
    ]);
    expect(messages(file(range('0', '100', '10'), sql, '    result: { filters: "id > 3" }\n'))).toEqual([
      'jobs.yaml:7:7 jobs[0].backfill: result.filters counts no rows up front, and a backfill resumes by row offsets across its chunks: filter in the query instead',
    ]);
  });
});
