import { type Data, makeData, RecordBatch, type Schema, Struct } from 'apache-arrow';
import { valueText } from '../kit/index.ts';
import { hiveSegment } from './hive.ts';

export interface PartitionRun {
  /** `col=value/col2=value2`, '' without partitioning. */
  readonly directory: string;
  readonly values: Readonly<Record<string, string | null>>;
  /** The rows of this run, partition columns removed (their values live in the path) unless kept. */
  readonly batch: RecordBatch;
}

/**
 * Splits batches into runs of consecutive rows with the same partition values. Runs are
 * zero-copy slices: sorted input gives one run per partition and batch; unsorted input works
 * too, at the cost of more, smaller writes.
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
      const runs: PartitionRun[] = [];
      let start = 0;
      let current: string[] | undefined;
      for (let row = 0; row <= batch.numRows; row++) {
        const key = row < batch.numRows ? texts.map((t, k) => t.text(columns[k]!, row) ?? '\u0000null') : undefined;
        if (current && (key === undefined || key.some((v, k) => v !== current![k]))) {
          const values = Object.fromEntries(partitionBy.map((name, k) => [name, current![k] === '\u0000null' ? null : current![k]!]));
          const directory = partitionBy.map((name) => hiveSegment(name, values[name] ?? null)).join('/');
          runs.push({ directory, values, batch: data.slice(start, row) });
          start = row;
        }
        current = key;
      }
      return runs;
    },
  };
}
