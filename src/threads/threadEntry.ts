import { enableCompileCache, flushCompileCache } from 'node:module';

/**
 * The first module of every worker thread sluice starts (`startWorker`): turns on Node's module
 * compile cache for this thread, then loads the thread's own module (its URL is `argv[0]` of the
 * thread, so `workerData` stays the module's). A thread loads the client, apache-arrow and undici
 * again (an isolate shares no compiled code with another): from the cache that costs about half
 * the CPU. The cache is Node's own (`NODE_COMPILE_CACHE` moves it, `NODE_DISABLE_COMPILE_CACHE=1`
 * turns it off); a directory that cannot be created or written only means no cache.
 */
enableCompileCache();
const url = process.argv[2];
if (url === undefined) throw new Error('threadEntry: started without the URL of the thread module');
await import(url);
// Written now rather than at the thread's end: a thread ended by terminate() would never write it.
flushCompileCache();
