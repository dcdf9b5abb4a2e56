/**
 * Splits one async iterable into `n` that each see every item, in order, without buffering the
 * whole source: the source is read only when every consumer still reading has room in its queue
 * (`highWaterMark` items), so the slowest output sets the pace (backpressure) and memory stays
 * at n x highWaterMark items. A source error reaches every consumer; a consumer that stops early
 * (its loop breaks or it is returned) no longer holds the others back; when all stop, the source
 * is returned so it can release what it holds (cancel fetches). `signal` aborting fails every
 * consumer with its reason.
 */
export function tee<T>(source: AsyncIterable<T>, n: number, highWaterMark = 2, signal?: AbortSignal): AsyncIterable<T>[] {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`tee: n must be a positive integer, got ${n}`);
  if (n === 1) return [source];
  const iterator = source[Symbol.asyncIterator]();
  const queues: T[][] = Array.from({ length: n }, () => []);
  const active = new Set<number>(Array.from({ length: n }, (_, i) => i));
  let done = false;
  let failure: { error: unknown } | undefined;
  let pulling: Promise<void> | undefined;
  const waiters = new Set<() => void>();

  const wakeAll = (): void => {
    for (const wake of [...waiters]) wake();
    waiters.clear();
  };
  // An abort wakes every consumer, including one parked behind a branch that nobody reads.
  signal?.addEventListener(
    'abort',
    () => {
      failure ??= { error: signal.reason };
      done = true;
      wakeAll();
      void Promise.resolve(pulling)
        .catch(() => undefined)
        .then(() => iterator.return?.())
        .catch(() => undefined);
    },
    { once: true },
  );
  const hasRoom = (): boolean => [...active].every((i) => queues[i]!.length < highWaterMark);

  const pull = (): Promise<void> =>
    (pulling ??= (async () => {
      try {
        const result = await iterator.next();
        if (result.done) done = true;
        else for (const i of active) queues[i]!.push(result.value);
      } catch (error) {
        failure = { error };
        done = true;
      } finally {
        pulling = undefined;
        wakeAll();
      }
    })());

  const stop = async (index: number): Promise<void> => {
    if (!active.delete(index)) return;
    queues[index]!.length = 0;
    wakeAll();
    if (active.size === 0 && !done) {
      done = true;
      await pulling?.catch(() => undefined);
      await iterator.return?.();
    }
  };

  const consumer = (index: number): AsyncIterable<T> => ({
    [Symbol.asyncIterator]: () => ({
      async next(): Promise<IteratorResult<T>> {
        for (;;) {
          if (!active.has(index)) return { done: true, value: undefined };
          const queue = queues[index]!;
          if (failure && signal?.aborted) throw failure.error;
          if (queue.length > 0) {
            const value = queue.shift()!;
            wakeAll();
            return { done: false, value };
          }
          if (failure) throw failure.error;
          if (done) return { done: true, value: undefined };
          if (hasRoom() && !pulling) {
            await pull();
            continue;
          }
          await new Promise<void>((resolve) => waiters.add(resolve));
        }
      },
      async return(): Promise<IteratorResult<T>> {
        await stop(index);
        return { done: true, value: undefined };
      },
    }),
  });

  return Array.from({ length: n }, (_, i) => consumer(i));
}
