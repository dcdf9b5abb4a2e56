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
 * process's loading flags, through THREAD_ENTRY, which turns on Node's compile cache for the thread
 * first. Every thread sluice starts (the service thread) starts here.
 */
export function startWorker(base: string, importMetaUrl: string, options: Omit<WorkerOptions, 'argv' | 'execArgv' | 'eval'> = {}): Worker {
  return new Worker(THREAD_ENTRY, { ...options, argv: [workerModuleUrl(base, importMetaUrl).href], execArgv: workerExecArgv() });
}

/**
 * The first module of every worker thread: turns on Node's module compile cache for the thread,
 * then loads the thread's own module (its URL is the thread's last argv, so `workerData` stays the
 * module's). A thread loads the client, apache-arrow and undici again (an isolate shares no
 * compiled code with another): from the cache that costs about half the CPU. The cache is Node's
 * own (`NODE_COMPILE_CACHE` moves it, `NODE_DISABLE_COMPILE_CACHE=1` turns it off); a directory that
 * cannot be created or written only means no cache. Plain JavaScript in a data: URL, not a module
 * file: run from the sources, a TypeScript entry would be type-stripped before the cache is on, and
 * a single module stripped outside the cache loads Node's type stripper into the thread (about
 * 15 MB of the process's peak). A module, not `eval` code, so that the process's `--import`
 * preloads run in the thread too. The cache is written once the module has loaded rather than at
 * the thread's end: a thread ended by terminate() would never write it.
 */
const THREAD_ENTRY = new URL(
  `data:text/javascript,${encodeURIComponent(`import { enableCompileCache, flushCompileCache } from 'node:module';
enableCompileCache();
await import(process.argv.at(-1));
flushCompileCache();`)}`,
);
