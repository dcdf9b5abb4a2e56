import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** Flags a worker thread takes over from the process: module loading and warnings. */
const KEPT_FLAGS = new Set(['--import', '--require', '-r', '--conditions', '-C', '--loader', '--experimental-loader']);

/**
 * The process's flags that a worker thread accepts and needs. Others make `new Worker` throw (V8
 * flags such as --expose-gc, per-process ones) or make the thread refuse its module file
 * (`--input-type`, set by `node --input-type=module -e ...`).
 */
export function workerExecArgv(execArgv: readonly string[] = process.execArgv): string[] {
  const out: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i]!;
    const name = arg.split('=')[0]!;
    if (KEPT_FLAGS.has(name)) {
      out.push(arg);
      if (!arg.includes('=') && i + 1 < execArgv.length) out.push(execArgv[++i]!);
    } else if (name.startsWith('--experimental-') || name.startsWith('--no-experimental-') || name === '--no-warnings' || name === '--disable-warning') {
      out.push(arg);
    }
  }
  return out;
}

/**
 * The URL of a worker module beside `importMetaUrl`, named `base`: `.ts` when running from the
 * sources, `.js` in the compiled package (the same extension as the calling module).
 */
export function workerModuleUrl(base: string, importMetaUrl: string): URL {
  return new URL(`./${base}${extname(fileURLToPath(importMetaUrl))}`, importMetaUrl);
}

/**
 * Starts the worker thread module `base` beside `importMetaUrl` (see `workerModuleUrl`) with the
 * process's loading flags, through threadEntry, which turns on Node's compile cache for the thread
 * first. Every thread sluice starts (the service thread) starts here.
 */
export function startWorker(base: string, importMetaUrl: string, options: Omit<WorkerOptions, 'argv' | 'execArgv' | 'eval'> = {}): Worker {
  return new Worker(ENTRY_URL, { ...options, argv: [workerModuleUrl(base, importMetaUrl).href], execArgv: workerExecArgv() });
}

const ENTRY_URL = workerModuleUrl('threadEntry', import.meta.url);
