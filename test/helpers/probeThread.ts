// A worker thread for tests of `startWorker`: answers with what it was started with, where its
// compile cache is (undefined: off) and whether Node's type stripper (amaro) was loaded into it.
import { getCompileCacheDir } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';

parentPort!.postMessage({ workerData: workerData as unknown, cacheDir: getCompileCacheDir(), typeStripper: (process as unknown as { moduleLoadList: string[] }).moduleLoadList.some((m) => m.includes('amaro')) });
