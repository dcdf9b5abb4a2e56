// Streams typed rows from the library, without the CLI:
//   npx node config/examples/stream-rows.ts "select id, amount from sample.events limit 5"
// (`npx node`: the project's Node 24, which runs TypeScript.)
// With SERVICE_BASE_URL and SERVICE_API_KEY set it talks to that service; otherwise it starts
// the embedded local service (data under ./.sluice/service), as `sluice run` does.
import { connect } from '../../src/jobs/run/connect.ts';
import { stream } from '../../src/pipeline/stream.ts';

const sql = process.argv[2] ?? 'select id, ts, name, amount from sample.events order by id limit 10';
const connection = await connect(process.env.SERVICE_BASE_URL ? { base_url: process.env.SERVICE_BASE_URL } : undefined, {
  env: process.env,
  cwd: process.cwd(),
});
try {
  const rows = stream(connection.client, { sql }, { concurrency: 4 });
  // Rows are objects keyed by column name, typed from column_types: bigint columns arrive as
  // bigint (exact beyond 2^53), decimals as exact strings, timestamps as Dates.
  for await (const row of rows) {
    process.stdout.write(`${JSON.stringify(row, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}\n`);
  }
  const progress = rows.progress;
  process.stderr.write(`${progress?.rows ?? 0} rows in ${progress?.pages ?? 0} pages\n`);
} finally {
  await connection.close();
}
