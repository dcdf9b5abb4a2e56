import { parentPort, workerData } from 'node:worker_threads';
import { startService, type ServiceOptions } from './index.ts';
import { sendError } from '../threads/threadErrors.ts';

/**
 * The local service in a worker thread of its own (started by `startServiceThread`): its page
 * encoding and DuckDB calls then run beside the caller's export instead of on its event loop.
 */
const port = parentPort;
if (port === null) throw new Error('serviceThread.ts runs as a worker thread');
// A halt can come while the service is starting (a second Ctrl-C during the first start, which
// loads the sample data): it is answered once the start has settled and the engine is stopped.
let halting = false;
/** Aborted when the closing owner stops waiting for the processes that use its service. */
const borrowers = new AbortController();
/** What starting said to tell the user (sample data generated or rebuilt), sent with the address. */
const notices: string[] = [];
const started = startService({ ...(workerData as ServiceOptions), onNotice: (message) => notices.push(message) });
port.on('message', (message: unknown) => {
  if (message === 'halt' && !halting) {
    halting = true;
    const halted = (): void => port.postMessage({ halted: true });
    void started.then((service) => service.halt()).then(halted, halted);
  } else if (message === 'undrain') {
    borrowers.abort();
  } else if (typeof message === 'object' && message !== null && 'close' in message) {
    const { waitForBorrowers } = message as { waitForBorrowers?: boolean };
    void started.then((service) => service.close(waitForBorrowers === true ? borrowers.signal : undefined)).then(
      () => port.postMessage({ closed: true }),
      (error: unknown) => port.postMessage({ closed: true, error: sendError(error) }),
    );
  }
});
try {
  const service = await started;
  port.postMessage({ url: service.url, origin: service.origin, notices, ...(service.generatedKey === undefined ? {} : { generatedKey: service.generatedKey }) });
} catch (error) {
  port.postMessage({ error: sendError(error) });
}
