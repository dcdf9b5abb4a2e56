import { type Data, makeData, RecordBatch, type Schema, Struct } from 'apache-arrow';
import { valueText } from '../kit/index.ts';
import { hiveSegment } from './hive.ts';
import { takeRows } from './takeRows.ts';

export interface PartitionRun {
  /** `col=value/col2=value2`, '' without partitioning. */
  readonly directory: string;
  readonly values: Readonly<Record<string, string | null>>;
  /** The rows of this run, partition columns removed (their values live in the path) unless kept. */
  readonly batch: RecordBatch;
}

/**
 * Splits each batch into one run per partition value, in order of first appearance. Rows of a
 * partition that arrive in one stretch (sorted input) are a zero-copy slice; scattered rows are
 * gathered into a compact batch of their own, so unsorted input still makes one write per
 * partition and batch instead of one per row.
 */
export function partitioner(
  schema: Schema,
  partitionBy: readonly string[],
  keepColumns = false,
): { dataSchema: Schema; split(batch: RecordBatch): PartitionRun[] } {
  const keyIndexes = partitionBy.map((name) => schema.fields.findIndex((f) => f.name === name));
  const dataIndexes = schema.fields.map((_, i) => i).filter((i) => keepColumns || !keyIndexes.includes(i));
  const whole = partitionBy.length === 0 || keepColumns;
  const dataSchema = whole ? schema : schema.select(schema.fields.filter((_, i) => dataIndexes.includes(i)).map((f) => f.name));
  const texts = keyIndexes.map((i) => valueText(schema.fields[i]!));

  const project = (batch: RecordBatch): RecordBatch => {
    if (whole) return batch;
    const children = dataIndexes.map((i) => batch.data.children[i]!);
    return new RecordBatch(dataSchema, makeData({ type: new Struct(dataSchema.fields), length: batch.numRows, nullCount: 0, children }));
  };

  return {
    dataSchema,
    split(batch) {
      const data = project(batch);
      if (partitionBy.length === 0) return [{ directory: '', values: {}, batch: data }];
      const columns = keyIndexes.map((i) => batch.data.children[i] as Data);
      // Stretches [start, end) of equal partition values, gathered per partition.
      const groups = new Map<string, { values: (string | null)[]; stretches: number[] }>();
      let start = 0;
      let current: (string | null)[] | undefined;
      let currentKey = '';
      for (let row = 0; row <= batch.numRows; row++) {
        const values = row < batch.numRows ? texts.map((t, k) => t.text(columns[k]!, row)) : undefined;
        const key = values === undefined ? '' : JSON.stringify(values);
        if (current !== undefined && (values === undefined || key !== currentKey)) {
          const group = groups.get(currentKey) ?? { values: current, stretches: [] };
          group.stretches.push(start, row);
          groups.set(currentKey, group);
          start = row;
        }
        current = values;
        currentKey = key;
      }
      return [...groups.values()].map(({ values: texts, stretches }) => {
        const values = Object.fromEntries(partitionBy.map((name, k) => [name, texts[k] ?? null]));
        const directory = partitionBy.map((name) => hiveSegment(name, values[name] ?? null)).join('/');
        return { directory, values, batch: stretches.length === 2 ? data.slice(stretches[0]!, stretches[1]!) : gather(data, stretches) };
      });
    },
  };
}

function gather(batch: RecordBatch, stretches: number[]): RecordBatch {
  let rows = 0;
  for (let i = 0; i < stretches.length; i += 2) rows += stretches[i + 1]! - stretches[i]!;
  const indices = new Int32Array(rows);
  let at = 0;
  for (let i = 0; i < stretches.length; i += 2) for (let row = stretches[i]!; row < stretches[i + 1]!; row++) indices[at++] = row;
  return new RecordBatch(batch.schema, takeRows(batch.data, indices) as Data<Struct>);
}
