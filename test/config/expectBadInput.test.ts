import { describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { JobFileError, parseJobFile } from '../../src/config/index.ts';

/** The messages a job file with this `expect:` block (lines 7 on) is rejected with. */
function messages(expectBlock: string, result = ''): string[] {
  const text = `jobs:\n  - name: gated\n    source: { sql: select 1 }\n    outputs:\n      - { format: csv, path: ./out }\n${result}    expect:\n${expectBlock}`;
  try {
    parseJobFile(text, { file: 'jobs.yaml', registry: builtins, env: {} });
  } catch (error) {
    expect(error).toBeInstanceOf(JobFileError);
    return (error as JobFileError).message.split('\n');
  }
  throw new Error('expected the job file to be rejected');
}

/** The messages a whole job file is rejected with. */
function rejected(text: string): string[] {
  try {
    parseJobFile(text, { file: 'jobs.yaml', registry: builtins, env: {} });
  } catch (error) {
    expect(error).toBeInstanceOf(JobFileError);
    return (error as JobFileError).message.split('\n');
  }
  throw new Error('expected the job file to be rejected');
}

describe('expect: bad input at load, with FILE:LINE:COL', () => {
  it('accepts a full contract and keeps it as written', () => {
    const file = parseJobFile(
      `jobs:\n  - name: ok\n    source: { sql: select 1 }\n    outputs: [{ format: csv, path: ./out }]\n    expect:\n      columns: { id: bigint, amount: "decimal(18, 4)" }\n      rows: { min: 1 }\n      on_violation: warn\n      checks:\n        id: { not_null: true, unique: true, min: 0, on_violation: fail }\n        kind: { accepted_values: [a, b] }\n`,
      { file: 'jobs.yaml', registry: builtins, env: {} },
    );
    expect(file.jobs[0]!.expect).toEqual({
      columns: { id: 'bigint', amount: 'decimal(18, 4)' },
      rows: { min: 1 },
      on_violation: 'warn',
      checks: { id: { not_null: true, unique: true, min: 0, on_violation: 'fail' }, kind: { accepted_values: ['a', 'b'] } },
    });
  });

  it('columns: a type the service does not report, a type that is not text', () => {
    expect(messages('      columns: { id: bigintt }\n')).toEqual([
      'jobs.yaml:7:22 jobs[0].expect.columns.id: "bigintt" is not a column type the service reports (e.g. bigint, double, varchar, decimal(18,2), timestamp, date, boolean)',
    ]);
    expect(messages('      columns: { id: 3 }\n')).toEqual(['jobs.yaml:7:22 jobs[0].expect.columns.id: expected string, got number 3']);
  });

  it('rows: no bound, min above max, a negative or fractional count', () => {
    expect(messages('      rows: {}\n')).toEqual(['jobs.yaml:7:13 jobs[0].expect.rows: give min, max or both']);
    expect(messages('      rows: { min: 10, max: 5 }\n')).toEqual(['jobs.yaml:7:20 jobs[0].expect.rows.min: min 10 is above max 5']);
    expect(messages('      rows: { max: -1 }\n')).toEqual(['jobs.yaml:7:20 jobs[0].expect.rows.max: expected number to be >=0, got -1']);
    expect(messages('      rows: { min: 1.5 }\n')).toEqual(['jobs.yaml:7:20 jobs[0].expect.rows.min: expected int, got number 1.5']);
  });

  it('checks: an empty check, min above max, empty accepted_values, a misspelt check', () => {
    expect(messages('      checks: { id: {} }\n')).toEqual(['jobs.yaml:7:21 jobs[0].expect.checks.id: no check given: add not_null, unique, accepted_values, min, max or predicate']);
    expect(messages('      checks:\n        id: { min: 9, max: 1 }\n')).toEqual(['jobs.yaml:8:20 jobs[0].expect.checks.id.min: min 9 is above max 1']);
    expect(messages('      checks:\n        id: { accepted_values: [] }\n')).toEqual(['jobs.yaml:8:32 jobs[0].expect.checks.id.accepted_values: expected array to have >=1 items, got []']);
    expect(messages('      checks:\n        id: { notnull: true }\n')).toEqual([
      'jobs.yaml:8:15 jobs[0].expect.checks.id.notnull: unknown field',
      'jobs.yaml:8:13 jobs[0].expect.checks.id: no check given: add not_null, unique, accepted_values, min, max or predicate',
    ]);
    expect(messages('      checks:\n        id: { unique: yes please }\n')).toEqual(['jobs.yaml:8:23 jobs[0].expect.checks.id.unique: expected boolean, got string "yes please"']);
  });

  it('on_violation: an unknown policy lists the choices; quarantine is accepted', () => {
    expect(messages('      on_violation: ignore\n')).toEqual(['jobs.yaml:7:21 jobs[0].expect.on_violation: expected one of fail|warn|quarantine, got "ignore"']);
    const file = parseJobFile(`jobs:\n  - name: q\n    source: { sql: select 1 }\n    outputs: [{ format: csv, path: ./out }]\n    expect:\n      on_violation: quarantine\n      checks: { id: { not_null: true } }\n`, { file: 'jobs.yaml', registry: builtins, env: {} });
    expect(file.jobs[0]!.expect!.on_violation).toBe('quarantine');
  });

  it('quarantine: an output with no place beside it, an output where another\'s quarantine goes, an incremental job', () => {
    const quarantining = (outputs: string, more = '') =>
      rejected(`jobs:\n  - name: q\n    source: { sql: "select 1 where x > {{after}}" }\n    outputs:\n${outputs}${more}    expect:\n      checks:\n        id: { not_null: true, on_violation: quarantine }\n`);
    expect(quarantining('      - { format: csv, path: "-" }\n')).toEqual([
      'jobs.yaml:5:30 jobs[0].outputs[0].path: on_violation: quarantine writes the rows set aside beside each output, at its path + _quarantine: standard output has no place beside it for the quarantined rows: write this output to a directory or bucket',
    ]);
    expect(quarantining('      - { format: csv, path: "s3://bucket/" }\n')).toEqual([
      'jobs.yaml:5:30 jobs[0].outputs[0].path: on_violation: quarantine writes the rows set aside beside each output, at its path + _quarantine: an output at the root of a bucket or container has no sibling for its quarantine: write it under a prefix (s3://bucket/orders)',
    ]);
    expect(quarantining('      - { format: csv, path: ./out }\n      - { format: csv, path: ./out_quarantine/ }\n')).toEqual([
      "jobs.yaml:6:30 jobs[0].outputs[1].path: is where outputs[0]'s quarantine goes (on_violation: quarantine writes beside each output at its path + _quarantine): move one of them",
    ]);
    expect(quarantining('      - { format: csv, path: ./out, mode: append }\n', '    incremental: { cursor: id, parameter: after, initial: 0 }\n')).toEqual([
      'jobs.yaml:9:45 jobs[0].expect.checks.id.on_violation: quarantine is not supported with incremental: the rows set aside would be read again by the next run (their cursor is above the committed one); use fail or warn',
    ]);
  });

  it('predicate: a syntax error says where in the predicate; a column result.columns does not fetch', () => {
    expect(messages('      checks:\n        amount: { predicate: "amount >= 0 an" }\n')).toEqual([
      'jobs.yaml:8:30 jobs[0].expect.checks.amount.predicate: character 13 of "amount >= 0 an": expected "and", "or", an operator or the end of the predicate, got "an"',
    ]);
    expect(messages('      checks:\n        amount: { predicate: "amount between 1 or 2" }\n')).toEqual([
      'jobs.yaml:8:30 jobs[0].expect.checks.amount.predicate: character 18 of "amount between 1 or 2": expected "and" in "between ... and ...", got "or"',
    ]);
    expect(messages("      checks:\n        kind: { predicate: \"kind in ('a', 'b'\" }\n")).toEqual([
      'jobs.yaml:8:28 jobs[0].expect.checks.kind.predicate: character 18 of "kind in (\'a\', \'b\'": expected "," or ")" in the list of "in", got the end of the predicate',
    ]);
    expect(messages('      checks:\n        amount: { predicate: "amount > 0 and total < 5" }\n', '    result: { columns: [id, amount] }\n')).toEqual([
      'jobs.yaml:9:30 jobs[0].expect.checks.amount.predicate: reads total, not among result.columns (id, amount)',
    ]);
    expect(messages('      checks:\n        amount: { predicate: "" }\n')[0]).toMatch(/^jobs\.yaml:8:30 jobs\[0\]\.expect\.checks\.amount\.predicate: expected string to have >=1 characters/);
  });

  it('a column result.columns does not fetch, and an unknown field of expect', () => {
    expect(messages('      checks: { amount: { not_null: true } }\n', '    result: { columns: [id] }\n')).toEqual([
      'jobs.yaml:8:25 jobs[0].expect.checks.amount: "amount" is not among result.columns (id): it would never be fetched',
    ]);
    expect(messages('      colums: { id: bigint }\n')[0]).toMatch(/^jobs\.yaml:7:7 jobs\[0\]\.expect\.colums: unknown field, did you mean "columns"\?/);
  });

  it("an output's expect: its mistakes at its place, one quarantine per output, kept on the loaded output", () => {
    const file = (outputs: string, jobExpect = '') =>
      `jobs:\n  - name: q\n    source: { sql: select 1 }\n${jobExpect}    outputs:\n${outputs}`;
    const loaded = parseJobFile(file('      - { format: csv, path: ./out, expect: { rows: { min: 1 }, checks: { id: { predicate: "id > 0" } } } }\n'), { file: 'jobs.yaml', registry: builtins, env: {} });
    expect(loaded.jobs[0]!.outputs[0]!.expect).toEqual({ rows: { min: 1 }, checks: { id: { predicate: 'id > 0' } } });
    expect(loaded.jobs[0]!.outputs[0]!.format.type).toBe('csv');
    expect(rejected(file('      - format: csv\n        path: ./out\n        expect:\n          checks: { id: { predicate: "id >" } }\n'))).toEqual([
      'jobs.yaml:8:38 jobs[0].outputs[0].expect.checks.id.predicate: character 5 of "id >": expected a column, a number, a \'text\', true, false, null or "(", got the end of the predicate',
    ]);
    expect(rejected(file('      - format: csv\n        path: ./out\n        expect: { rows: {}, colums: {} }\n'))).toEqual([
      'jobs.yaml:7:29 jobs[0].outputs[0].expect.colums: unknown field, did you mean "columns"?',
      'jobs.yaml:7:25 jobs[0].outputs[0].expect.rows: give min, max or both',
    ]);
    expect(rejected(file('      - format: csv\n        path: ./out\n        expect: { checks: { id: { max: 1, on_violation: quarantine } } }\n', '    expect: { on_violation: quarantine, checks: { id: { not_null: true } } }\n'))).toEqual([
      "jobs.yaml:8:57 jobs[0].outputs[0].expect.checks.id.on_violation: the job's expect quarantines too, into the same place beside this output: keep the quarantining checks in one of the two",
    ]);
    expect(rejected(file('      - { format: csv, path: "-", expect: { on_violation: quarantine, checks: { id: { max: 1 } } } }\n'))[0]).toMatch(/^jobs\.yaml:5:30 jobs\[0\]\.outputs\[0\]\.path: on_violation: quarantine writes the rows set aside beside each output/);
  });
});
