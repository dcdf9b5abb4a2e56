// A worker thread for tests of `startWorker`: answers with what it was started with and where its
// compile cache is (undefined: off).
import { getCompileCacheDir } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';

parentPort!.postMessage({ workerData: workerData as unknown, cacheDir: getCompileCacheDir() });
