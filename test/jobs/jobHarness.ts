// What the runJob test files share: the real local service, a client with its admin key and a
// scratch folder, started before a file's tests and stopped after them, and `job()` to parse one
// job of YAML (`${DIR}` is the scratch folder). The bindings below are live: a file imports them
// and reads them in its tests, once `useJobHarness` has started them.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { ServiceClient } from '../../src/client/index.ts';
import { parseJobFile, type Job } from '../../src/config/index.ts';
import { startTestService, type TestService, type TestServiceOverrides } from '../helpers/service.ts';

export let svc: TestService;
export let client: ServiceClient;
export let dir: string;

/** Starts the service, client and folder before this file's tests (`prefix` names the folder) and stops them after. */
export function useJobHarness(service: TestServiceOverrides, prefix: string): void {
  beforeAll(async () => {
    svc = await startTestService(service);
    client = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.admin, env: {} });
    dir = await mkdtemp(join(tmpdir(), prefix));
  });
  afterAll(async () => {
    await client?.close();
    await svc?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });
}

/** The one job of `yaml` (the lines under `jobs:`), with `${DIR}` the scratch folder. */
export function job(yaml: string): Job {
  return parseJobFile(`jobs:\n${yaml}`, { file: 'test.yaml', registry: builtins, env: { DIR: dir } }).jobs[0]!;
}
