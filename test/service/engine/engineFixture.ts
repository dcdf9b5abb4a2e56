// A real engine over a temporary data directory, with a small sample dataset.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEngine, type ExecuteOptions, type SqlEngine } from '../../../src/service/engine/index.ts';

export const SAMPLE_ROWS = 1000;

export interface EngineFixture {
  engine: SqlEngine;
  dataDir: string;
  reopen(): Promise<SqlEngine>;
  close(): Promise<void>;
}

export async function startEngine(options: { sampleRows?: number } = {}): Promise<EngineFixture> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-engine-test-'));
  const open = (): Promise<SqlEngine> =>
    openEngine({ dataDir, datasets: ['sample'], sampleRows: options.sampleRows ?? SAMPLE_ROWS, duneSampleTransactions: 200, defaultThreads: 2 });
  const fixture: EngineFixture = {
    engine: await open(),
    dataDir,
    async reopen() {
      await fixture.engine.close();
      fixture.engine = await open();
      return fixture.engine;
    },
    async close() {
      await fixture.engine.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  return fixture;
}

let counter = 0;
export function nextId(): string {
  counter += 1;
  return `res_${process.pid}_${counter}`;
}

export function opts(extra: Partial<ExecuteOptions> = {}): ExecuteOptions {
  return { resultId: nextId(), signal: new AbortController().signal, ...extra };
}

/** Parses a page's rowsJson keeping integers exact (as bigint) where they exceed 2^53. */
export function parseExact(text: string): unknown {
  return JSON.parse(text, (_key, value, context?: { source?: string }) =>
    typeof value === 'number' && !Number.isSafeInteger(value) && context?.source && /^-?\d+$/.test(context.source)
      ? BigInt(context.source)
      : value,
  );
}
