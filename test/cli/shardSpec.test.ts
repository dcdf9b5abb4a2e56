import { describe, expect, it } from 'vitest';
import { shardSpec } from '../../src/cli/shardSpec.ts';
import { UsageError } from '../../src/cli/usageError.ts';
import { EXIT, exitCodeOf } from '../../src/cli/exitCodes.ts';

describe('shardSpec: the shard of this process, from the command line or the launcher', () => {
  it('is undefined without any shard option or launcher variable', () => {
    expect(shardSpec({}, {})).toBeUndefined();
  });

  it('reads --shard I/N with the run id from --run-id or SLUICE_RUN_ID', () => {
    expect(shardSpec({ shard: '1/4', runId: 'r1' }, {})).toEqual({ index: 1, count: 4, runId: 'r1', from: '--shard 1/4' });
    expect(shardSpec({ shard: '0/1' }, { SLUICE_RUN_ID: 'nightly-42' })).toMatchObject({ index: 0, count: 1, runId: 'nightly-42' });
  });

  it('reads the launchers: Kubernetes Indexed Job (with --shards), AWS Batch array, Cloud Run', () => {
    expect(shardSpec({ shards: '8' }, { JOB_COMPLETION_INDEX: '3', SLUICE_RUN_ID: 'uid-1' })).toEqual({ index: 3, count: 8, runId: 'uid-1', from: 'JOB_COMPLETION_INDEX=3 with --shards 8' });
    // An array child's job id is `<array job id>:<index>`: the shared part is the run id.
    expect(shardSpec({}, { AWS_BATCH_JOB_ARRAY_INDEX: '2', AWS_BATCH_JOB_ARRAY_SIZE: '5', AWS_BATCH_JOB_ID: 'b1c2-d3:2' })).toMatchObject({ index: 2, count: 5, runId: 'b1c2-d3' });
    expect(shardSpec({}, { CLOUD_RUN_TASK_INDEX: '0', CLOUD_RUN_TASK_COUNT: '3', CLOUD_RUN_EXECUTION: 'export-abc12' })).toMatchObject({ index: 0, count: 3, runId: 'export-abc12' });
  });

  const refused: [string, Parameters<typeof shardSpec>[0], Record<string, string>, string][] = [
    ['an index out of range', { shard: '3/2', runId: 'r' }, {}, '--shard 3/2: shard index 3 is out of range for 2 shards (indexes run from 0 to 1)'],
    ['--shard without a count', { shard: '1', runId: 'r' }, {}, '--shard "1": expected INDEX/COUNT, e.g. --shard 0/4 for the first of four shards (indexes run from 0 to COUNT-1); the count is missing: --shard 1/N'],
    ['a count of zero', { shard: '0/0', runId: 'r' }, {}, '--shard 0/0: the shard count must be between 1 and 10000, got 0'],
    ['not numbers', { shard: 'a/b', runId: 'r' }, {}, '--shard "a/b": expected INDEX/COUNT'],
    ['--shard and --shards together', { shard: '0/2', shards: '2', runId: 'r' }, {}, '--shard 0/2 gives the count already: leave out --shards 2'],
    ['JOB_COMPLETION_INDEX without --shards', {}, { JOB_COMPLETION_INDEX: '1' }, 'JOB_COMPLETION_INDEX=1 is set (a Kubernetes Indexed Job) but the shard count is not: pass --shards N with N the Job\'s completions'],
    ['--shards without a launcher index', { shards: '4' }, {}, '--shards 4 needs the index from a launcher'],
    ['no run id', { shard: '0/2' }, {}, '--shard 0/2: the shards of one export need an id they all share, new for each run: pass --run-id ID or set SLUICE_RUN_ID'],
    ['a run id with a slash', { shard: '0/2', runId: 'a/b' }, {}, 'run id "a/b": use 1 to 128 letters'],
  ];
  it.each(refused)('refuses %s with a usage error (exit 2) naming the values', (_what, args, env, message) => {
    let error: unknown;
    try {
      shardSpec(args, env);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toContain(message);
    expect(exitCodeOf(error)).toBe(EXIT.config);
  });
});
