import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { EXIT } from './exitCodes.ts';
import type { CliIo } from './io.ts';
import type { Logger } from './log.ts';
import { UsageError } from './usageError.ts';

// The package's own bin, found through its package.json: this module sits at a different depth in
// the sources (src/cli) and in the compiled output (dist/src/cli).
const ENTRY = join(dirname(createRequire(import.meta.url).resolve('sluice/package.json')), 'bin', 'sluice.js');
const MAX_PROCESSES = 256;

export interface SpawnShardsOptions {
  readonly io: CliIo;
  readonly log: Logger;
  readonly signal: AbortSignal;
  /** `--processes N` as given. */
  readonly processes: string;
  /** The `run` arguments every process gets (the job file, `--job`, `--json`, ...), without the shard options. */
  readonly args: readonly string[];
  readonly runId: string | undefined;
}

/**
 * `sluice run FILE --processes N`: N local processes of the same command, each `--shard i/N` with
 * one run id, so that a sharded export runs on one machine exactly as it runs under a cluster
 * launcher (same code path, same plan, same single commit). Their output passes through; the exit
 * code is the first failing process's. A process that fails stops the others (shard 0 failing before
 * its plan would leave them waiting); a rerun with the same run id resumes every shard.
 */
export async function spawnShards(options: SpawnShardsOptions): Promise<number> {
  const { io, log } = options;
  const count = Number(options.processes);
  if (!/^\d+$/.test(options.processes) || count < 1 || count > MAX_PROCESSES) throw new UsageError(`--processes ${options.processes}: expected a whole number from 1 to ${MAX_PROCESSES}`);
  const runId = options.runId ?? io.env.SLUICE_RUN_ID ?? `local-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
  log.info('starting shard processes', { processes: count, run_id: runId });
  const children: ChildProcess[] = [];
  let exit: number = EXIT.ok;
  const stopAll = (): void => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  };
  const onAbort = (): void => stopAll();
  options.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const done = Array.from({ length: count }, (_, index) => {
      const child = spawn(process.execPath, [ENTRY, 'run', ...options.args, '--shard', `${index}/${count}`, '--run-id', runId], {
        cwd: io.cwd,
        env: { ...io.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      child.stdout!.on('data', (chunk: Buffer) => io.stdout.write(chunk));
      child.stderr!.on('data', (chunk: Buffer) => io.stderr.write(chunk));
      return new Promise<void>((resolve) => {
        child.on('error', (error) => {
          log.error(`shard ${index}/${count} could not start: ${error.message}`, { shard: index });
          if (exit === EXIT.ok) exit = EXIT.other;
          stopAll();
          resolve();
        });
        child.on('close', (code, signal) => {
          const status = code ?? (signal === null ? EXIT.other : EXIT.interrupted);
          if (status !== EXIT.ok && exit === EXIT.ok) {
            exit = status;
            log.error(`shard ${index}/${count} failed (exit code ${status}); stopping the other shards. Rerun with --run-id ${runId} to resume`, { shard: index, exit_code: status, run_id: runId });
            stopAll();
          }
          resolve();
        });
      });
    });
    await Promise.all(done);
  } finally {
    options.signal.removeEventListener('abort', onAbort);
  }
  return options.signal.aborted ? EXIT.interrupted : exit;
}
