// stream() rows over JSON pages of a whole result, in a process of its own: cold as a user's first
// read is (the generated text scanner compiled for the first time, V8 tiering, the heap growing),
// the same conditions as the official client's case (bench/linkCase.ts) it is compared with.
import { ServiceClient } from '../src/client/index.ts';
import { stream } from '../src/pipeline/stream.ts';
import type { OfficialInput } from './linkCase.ts';

export async function rowsCase(input: OfficialInput): Promise<void> {
  const client = new ServiceClient({ baseUrl: input.url, apiKey: input.key, env: {} });
  try {
    const t = performance.now();
    let rows = 0;
    for await (const _ of stream(client, { executionId: input.executionId }, { wire: 'json' })) rows++;
    const ms = performance.now() - t;
    console.log(JSON.stringify({ ms, rows }));
  } finally {
    await client.close();
  }
}
