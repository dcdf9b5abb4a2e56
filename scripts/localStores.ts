// The local object stores that the tests write to, also for trying the S3 and Azure examples on a
// laptop (`npm run dev:s3`, `npm run dev:azure`): fauxqs (an S3 server in Node) and azurite
// (Microsoft's Azure Storage emulator), both dev dependencies, both bound to 127.0.0.1.
import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { buildApp } from 'fauxqs';

/** Azurite's well-known development account (documented by Microsoft; not a secret). */
export const AZURITE_ACCOUNT = 'devstoreaccount1';
export const AZURITE_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

export interface RunningServer {
  readonly port: number;
  stop(): Promise<void>;
}

/** fauxqs on 127.0.0.1 (`startFauxqs` itself listens on every interface); port 0: a free one. */
export async function startFauxqsServer(port: number): Promise<RunningServer> {
  const app = buildApp({ logger: false });
  await app.listen({ port, host: '127.0.0.1' });
  return { port: (app.server.address() as AddressInfo).port, stop: () => app.close() };
}

/**
 * Azurite's Blob service in a process of its own, on 127.0.0.1, in memory (or under `location`).
 * Unlike fauxqs it enforces create-only and if-match writes (409 / 412).
 */
export async function startAzuriteServer(port: number, location?: string): Promise<RunningServer> {
  const main = join(dirname(createRequire(import.meta.url).resolve('azurite/package.json')), 'dist', 'src', 'blob', 'main.js');
  const storage = location === undefined ? ['--inMemoryPersistence'] : ['--location', location];
  const child = spawn(process.execPath, [main, '--blobHost', '127.0.0.1', '--blobPort', String(port), ...storage, '--skipApiVersionCheck', '--disableTelemetry', '--loose'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // A process that dies without stopping it (a crash, a test timeout) takes azurite with it.
  const orphaned = (): void => void child.kill();
  process.once('exit', orphaned);
  const bound = await new Promise<number>((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const match = /successfully listens on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`azurite exited with ${code}: ${out}`)));
  });
  return {
    port: bound,
    async stop() {
      process.off('exit', orphaned);
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
