// One racer of test/export/races.test.ts, in a process of its own: `commit` exports one of a few
// executions to the output again and again (each its own fingerprint, so nothing is skipped);
// `sweep` removes what earlier runs left, as a run that finds the output committed does. Prints
// its counts as one JSON line when its time is up.
import { builtins } from '../../connectors/index.ts';
import { manifestCommit, openDestination, type OutputConfig, writeExport } from '../../src/export/index.ts';
import { PreconditionFailedError } from '../../src/kit/index.ts';
import { numbered, numberedSchema, resolved } from '../connectors/fixtures.ts';

const [role, outputJson, millis, seed] = process.argv.slice(2) as [string, string, string, string];
const output = resolved(JSON.parse(outputJson) as OutputConfig, builtins);
const until = Date.now() + Number(millis);
const counts = { commits: 0, lost: 0, failed: 0, sweeps: 0, errors: [] as string[] };

while (Date.now() < until) {
  if (role === 'commit') {
    const executionId = `e${seed}-${counts.commits + counts.lost + counts.failed}`;
    try {
      await writeExport({ schema: numberedSchema, batches: numbered(30, 10), meta: { executionId, totalRowCount: 30, fingerprint: executionId } }, output);
      counts.commits++;
    } catch (error) {
      // A loser fails loudly: the other writer committed first.
      if (error instanceof PreconditionFailedError) counts.lost++;
      else {
        counts.failed++;
        counts.errors.push((error as Error).message);
      }
    }
  } else {
    const destination = openDestination(output);
    try {
      await destination.sweep!(async () => (await manifestCommit.read(destination))?.owns);
      counts.sweeps++;
    } catch (error) {
      counts.failed++;
      counts.errors.push((error as Error).message);
    } finally {
      await destination.close();
    }
  }
}
console.log(JSON.stringify({ ...counts, errors: counts.errors.slice(0, 3) }));
