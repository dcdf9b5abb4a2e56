// A writer of test/export/emptyCommitFolder.test.ts, in a process of its own: it starts exporting
// to the output with attempt id `attemptId` and stalls inside its first part (its rows still
// coming), so its commit folder exists and holds no file yet. The test kills it with SIGKILL there.
import type { RecordBatch } from 'apache-arrow';
import { builtins } from '../../connectors/index.ts';
import { openExport, type OutputConfig } from '../../src/export/index.ts';
import { numbered, numberedSchema, resolved } from '../connectors/fixtures.ts';

const [outputJson, attemptId] = process.argv.slice(2) as [string, string];
const output = resolved(JSON.parse(outputJson) as OutputConfig, builtins);

/** The first batch, then nothing ever again. */
async function* firstThenStall(batches: AsyncIterable<RecordBatch>): AsyncIterable<RecordBatch> {
  for await (const batch of batches) {
    yield batch;
    break;
  }
  await new Promise(() => undefined);
}

// Kept running until killed (a pending promise alone would let the process end).
setInterval(() => undefined, 60_000);
const opened = await openExport(output, { executionId: 'e-killed' }, { resume: { attemptId } });
await opened.write({ schema: numberedSchema, batches: firstThenStall(numbered(1000, 100)), meta: { executionId: 'e-killed', pageSize: 100 } });
