import type { PageRequest, PageShape } from '../../src/pipeline/fetchOrdered.ts';

/** A page of the in-memory result: row `i` of the result is the number `i`. */
export interface MemoryPage extends PageShape {
  readonly rows: number[];
}

export interface MemorySourceOptions {
  /** Rows in the result. */
  total: number;
  /** The most rows the "service" returns per request, whatever the limit asked (its page cap). */
  cap?: number;
  /** Milliseconds before a request answers; called once per request. */
  latency?: (request: PageRequest, call: number) => number;
  /** Rows to return at a given offset instead of the limit (a page shorter, or longer, than asked). */
  rowsAt?: (offset: number, limit: number) => number | undefined;
  /** Makes the request fail (the error it rejects with), or undefined to answer normally. */
  failAt?: (request: PageRequest, call: number) => Error | undefined;
  /** Never answer (only an abort settles the request). */
  hang?: (request: PageRequest, call: number) => boolean;
  /** `next_offset` to report instead of offset + rows (a misbehaving service). */
  nextOffsetAt?: (offset: number, rows: number) => number | undefined;
}

/**
 * A deterministic page source: a plain async function over an array, with counters of what the
 * fetcher did to it. Not a network fake: the fetcher's seam is this function type.
 */
export function memorySource(options: MemorySourceOptions) {
  const stats = {
    calls: [] as PageRequest[],
    inFlight: 0,
    maxInFlight: 0,
    settled: 0,
    signals: [] as AbortSignal[],
    /** `calls.length - received` sampled at every call: pages fetched ahead of the consumer. */
    maxAhead: 0,
    /** Set by the consumer: pages it has received. */
    received: 0,
  };

  const fetchPage = (request: PageRequest, signal: AbortSignal): Promise<MemoryPage> => {
    const call = stats.calls.length;
    stats.calls.push(request);
    stats.signals.push(signal);
    stats.inFlight++;
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
    stats.maxAhead = Math.max(stats.maxAhead, stats.calls.length - stats.received);
    return new Promise<MemoryPage>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const finish = () => {
        stats.inFlight--;
        stats.settled++;
      };
      const onAbort = () => {
        clearTimeout(timer);
        finish();
        reject(signal.reason);
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      if (options.hang?.(request, call)) return;
      timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        finish();
        const error = options.failAt?.(request, call);
        if (error) return reject(error);
        resolve(pageAt(request));
      }, options.latency?.(request, call) ?? 0);
    });
  };

  const pageAt = ({ offset, limit }: PageRequest): MemoryPage => {
    const asked = Math.min(limit, options.cap ?? Number.POSITIVE_INFINITY);
    const n = Math.max(0, Math.min(options.rowsAt?.(offset, limit) ?? asked, options.total - offset));
    const rows = Array.from({ length: n }, (_, i) => offset + i);
    const end = offset + n;
    const nextOffset = end < options.total ? (options.nextOffsetAt?.(offset, n) ?? end) : undefined;
    return { rows, rowCount: n, nextOffset };
  };

  return { fetchPage, stats };
}
