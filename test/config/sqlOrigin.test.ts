// An SQL error's line and column, counted in the SQL text, shown as the job file's FILE:LINE:COL.
import { describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { ExecutionFailedError } from '../../src/client/errors.ts';
import { sqlErrorAt } from '../../src/cli/output/summary.ts';
import { parseJobFile } from '../../src/config/index.ts';

function sources(text: string): object[] {
  return parseJobFile(text, { file: 'jobs.yaml', registry: builtins, env: { DAY: '2026-01-01' } }).jobs.map((j) => j.source);
}
const failed = (line: number, column: number) => new ExecutionFailedError('execution failed', { line, column });

const FILE = `jobs:
  - name: block
    source:
      sql: |
        select id,
          nme from sample.events
    outputs: [{ format: csv, path: ./a }]
  - name: plain
    source: { sql: select nme from t }
    outputs: [{ format: csv, path: ./b }]
  - name: quoted
    source: { sql: "select 'x', nme from t" }
    outputs: [{ format: csv, path: ./c }]
  - name: folded
    source:
      sql: >
        select id,
          nme from t
    outputs: [{ format: csv, path: ./d }]
  - name: variable
    source: { sql: "select * from t where day = '\${DAY}' and nme" }
    outputs: [{ format: csv, path: ./e }]
  - name: saved
    source: { query_id: 7 }
    outputs: [{ format: csv, path: ./f }]
`;

describe('sqlErrorAt', () => {
  const [block, plain, quoted, folded, variable, saved] = sources(FILE);

  it('maps a | block line for line, at the block indent', () => {
    // line 2, column 3 of the SQL is "nme" on the file's line 6, after 8 spaces of indent
    expect(sqlErrorAt(block!, failed(2, 3))).toBe('jobs.yaml:6:11');
    expect(sqlErrorAt(block!, failed(1, 1))).toBe('jobs.yaml:5:9');
    expect(FILE.split('\n')[5]!.slice(10, 13)).toBe('nme');
  });

  it('maps the one line of a plain or quoted scalar, past the opening quote', () => {
    expect(sqlErrorAt(plain!, failed(1, 8))).toBe('jobs.yaml:9:27');
    expect(FILE.split('\n')[8]!.slice(26, 29)).toBe('nme');
    expect(sqlErrorAt(quoted!, failed(1, 13))).toBe('jobs.yaml:12:33');
    expect(FILE.split('\n')[11]!.slice(32, 35)).toBe('nme');
    expect(sqlErrorAt(plain!, failed(2, 1))).toBeUndefined();
  });

  it('says nothing where the file position cannot be told', () => {
    expect(sqlErrorAt(folded!, failed(1, 1))).toBeUndefined(); // > joins lines
    expect(sqlErrorAt(variable!, failed(1, 45))).toBeUndefined(); // ${DAY} changed the columns
    expect(sqlErrorAt(saved!, failed(1, 1))).toBeUndefined(); // a saved query's SQL is not in the file
    expect(sqlErrorAt(block!, new Error('not an SQL error'))).toBeUndefined();
    expect(sqlErrorAt(block!, new ExecutionFailedError('no position', {}))).toBeUndefined();
  });
});
