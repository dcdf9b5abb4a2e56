import { once } from 'node:events';
import type { HeapInfo } from 'node:v8';
import type { Worker } from 'node:worker_threads';
import { reviveError, sendError, type SentError } from '../threads/threadErrors.ts';
import { startWorker } from '../threads/workerThreads.ts';
import type { ServiceOptions } from './index.ts';
import { SettingsError } from './settings.ts';
import { onExitStop } from '../exitHooks.ts';

/** The local service running in a worker thread: its address, and how to stop it. */
export interface ServiceThread {
  /** Base URL including the API prefix: `http://127.0.0.1:PORT/api`. */
  readonly url: string;
  readonly origin: string;
  readonly generatedKey?: string;
  /** What starting did that a user should hear of (sample data generated or rebuilt). */
  readonly notices: readonly string[];
  /** The worker thread's id (never 0, the main thread's). */
  readonly threadId: number;
  /**
   * Stops the service (as `ServiceHandle.close`) and ends its thread. Given `borrowers`, it first
   * waits for the other processes using it, until that signal aborts.
   */
  close(borrowers?: AbortSignal): Promise<void>;
  /** Stops its engine at once (`ServiceHandle.halt`): the process may then exit without aborting. */
  halt(): Promise<void>;
  /** The thread's V8 heap, as `v8.getHeapStatistics()` there (a process's memory split by thread). */
  heapStatistics(): Promise<HeapInfo>;
}

/**
 * The service thread's young generation. Page building allocates and drops megabytes per page;
 * V8's default young generation (tens of MB per semi-space once grown) then holds that garbage as
 * resident memory. The image's --max-semi-space-size=8 gives 24 MB; the same here, for every
 * process that embeds the service.
 */
const YOUNG_GENERATION_MB = 24;

type Message =
  | { url: string; origin: string; notices: string[]; generatedKey?: string }
  | { error: SentError }
  | { closed: true; error?: SentError }
  | { halted: true };

/**
 * Starts the local service (`startService`) in a worker thread. A job on the embedded service
 * then has the service's work (SQL, page encoding: ~150 ms per 31k-row JSON page) on another
 * core, not interleaved with its own fetching, decoding and writing on one event loop. Options
 * must be cloneable (no `clock`). A settings error is the same `SettingsError` as in-process (its
 * fields included: errors cross as every thread's do, see threadErrors.ts).
 */
export async function startServiceThread(options: Omit<ServiceOptions, 'clock' | 'onNotice'>): Promise<ServiceThread> {
  const worker = startWorker('serviceThread', import.meta.url, { workerData: options, resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } });
  const halt = async (): Promise<void> => {
    const done = Promise.race([answer(worker, 'halted'), once(worker, 'exit')]);
    worker.postMessage('halt');
    await done;
  };
  // A process stopped at once (a second Ctrl-C), even while the service is starting, stops the
  // engine before it exits.
  const unregister = onExitStop(halt);
  const first = await Promise.race([
    once(worker, 'message').then(([m]) => m as Message),
    once(worker, 'error').then(([e]) => ({ error: sendError(e) }) as Message),
    once(worker, 'exit').then(([code]) => ({ error: sendError(new Error(`the service thread exited with code ${String(code)} before it started`)) }) as Message),
  ]);
  if ('error' in first && first.error !== undefined) {
    unregister();
    await worker.terminate();
    throw reviveError(first.error, [SettingsError]);
  }
  const started = first as { url: string; origin: string; notices: string[]; generatedKey?: string };
  let closing: Promise<void> | undefined;
  return {
    url: started.url,
    origin: started.origin,
    notices: started.notices,
    threadId: worker.threadId,
    ...(started.generatedKey === undefined ? {} : { generatedKey: started.generatedKey }),
    close(borrowers) {
      closing ??= (async () => {
        const done = Promise.race([answer(worker, 'closed'), once(worker, 'exit')]);
        const undrain = (): void => worker.postMessage('undrain');
        borrowers?.addEventListener('abort', undrain, { once: true });
        worker.postMessage({ close: true, waitForBorrowers: borrowers !== undefined && !borrowers.aborted });
        const [reply] = (await done) as [Message | number];
        borrowers?.removeEventListener('abort', undrain);
        await worker.terminate();
        unregister();
        if (typeof reply === 'object' && 'error' in reply && reply.error !== undefined) {
          const error = reviveError(reply.error, [SettingsError]);
          throw new Error(`closing the service thread: ${error.message}`, { cause: error });
        }
      })();
      return closing;
    },
    halt,
    heapStatistics: () => worker.getHeapStatistics(),
  };
}

/** The thread's next message that has `key` (a close and a halt may be answered in either order). */
function answer(worker: Worker, key: 'closed' | 'halted'): Promise<[Message]> {
  return new Promise((resolve) => {
    const onMessage = (message: Message): void => {
      if (typeof message !== 'object' || !(key in message)) return;
      worker.off('message', onMessage);
      resolve([message]);
    };
    worker.on('message', onMessage);
  });
}
