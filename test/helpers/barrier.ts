import type { RecordBatch } from 'apache-arrow';

/**
 * Batches held until `parties` exports have all begun reading them: each racer has read the
 * committed state and written before any of them commits.
 */
export function barrier(parties: number): (batches: AsyncIterable<RecordBatch>) => AsyncIterable<RecordBatch> {
  let arrived = 0;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return async function* (batches) {
    if (++arrived === parties) open();
    await opened;
    yield* batches;
  };
}
