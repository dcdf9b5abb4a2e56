import type { RecordBatch } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { parseJobFile } from '../../src/config/index.ts';
import { RunContract } from '../../src/jobs/contracts/contract.ts';
import { ContractViolationError } from '../../src/jobs/errors.ts';
import { arrowSchema } from '../../src/types/arrow.ts';
import { createBatchBuilder } from '../../src/types/batch.ts';

// The contract over real Arrow batches (as the pipeline decodes them), without a service: the
// bound of `unique`'s memory, which a run would need millions of rows to reach.

const columns = [{ name: 'id', type: 'bigint' }];

function contractJob(checks: string) {
  return parseJobFile(`jobs:\n  - name: limits\n    source: { sql: select 1 }\n    outputs: [{ format: csv, path: ./out }]\n    expect:\n      checks:\n${checks}`, { file: 'jobs.yaml', registry: builtins, env: {} }).jobs[0]!;
}

/** Batches of `size` rows holding `values` in order. */
async function* batches(values: readonly (number | null)[], size: number): AsyncGenerator<RecordBatch> {
  const builder = createBatchBuilder(arrowSchema(columns));
  for (const [i, value] of values.entries()) {
    builder.append({ id: value === null ? null : BigInt(value) });
    if ((i + 1) % size === 0) yield builder.flush();
  }
  if (builder.length > 0) yield builder.flush();
}

async function drain(contract: RunContract, values: readonly (number | null)[], startRow = 0): Promise<number> {
  let rows = 0;
  for await (const batch of contract.watch(batches(values, 2), arrowSchema(columns), startRow)) rows += batch.numRows;
  return rows;
}

describe('RunContract over Arrow batches', () => {
  it('unique holds at most maxUnique distinct values, then stops with an error that says so and what to do', async () => {
    const contract = new RunContract(contractJob('        id: { unique: true }\n'), undefined, 3);
    const error = await drain(contract, [1, 2, null, 3, 4]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ContractViolationError);
    expect(error).toMatchObject({ check: 'expect.checks.id.unique', row: 5 });
    expect((error as Error).message).toMatch(/more than 3 distinct values of id: the check holds them in memory and stops there; check uniqueness in the query instead \(count\(distinct id\) = count\(\*\)\)/);
    // Under the bound, NULLs apart (they are not compared), every row passes.
    expect(await drain(new RunContract(contractJob('        id: { unique: true }\n'), undefined, 3), [1, null, 2, null, 3])).toBe(5);
  });

  it('row numbers count from where the read starts (a resumed read)', async () => {
    const contract = new RunContract(contractJob('        id: { not_null: true }\n'), undefined);
    const error = await drain(contract, [1, 2, 3, null], 1000).catch((e: unknown) => e);
    expect(error).toMatchObject({ check: 'expect.checks.id.not_null', row: 1004, value: null });
  });

  it('warn counts every violation of a check and logs its first once', async () => {
    const logged: string[] = [];
    const contract = new RunContract(contractJob('        id: { max: 2, on_violation: warn }\n'), (m) => logged.push(m));
    expect(await drain(contract, [1, 5, 2, 7, 9])).toBe(5);
    expect(contract.warnings).toEqual([{ check: 'expect.checks.id.max', column: 'id', count: 3, first: 'row 2 of the result: id is "5", above max 2' }]);
    expect(logged).toHaveLength(1);
  });
});
