// A network link on loopback: a TCP proxy in front of a server that holds every byte as a link of
// the given bandwidth and round-trip time would. Each direction is one link shared by all the
// connections through it (pages fetched in parallel share the bandwidth, as on a real link): a
// chunk leaves when the link has sent what came before it, at the bandwidth, and arrives half the
// round trip later. A new connection waits one round trip before its first bytes go (the TCP
// handshake). The link's queue holds one round trip of data; past that the proxy stops reading,
// and TCP backpressure slows the sender, as a bottleneck router's full buffer would.
// Not modelled: TCP slow start and loss (they would only slow every client further; `tc netem`
// needs privileges the bench does not have).
//
// `startLinkProxy` runs in the calling process; bench/link.ts runs it in a process of its own
// (`serveLinkProxy`), so that its timers do not wait behind the client's work.
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface LinkSpec {
  /** Bandwidth of each direction, bits per second. */
  readonly bitsPerSecond: number;
  readonly rttMs: number;
}

export interface LinkProxy {
  readonly port: number;
  /** Bytes carried so far: server to client (down), client to server (up). */
  bytes(): { down: number; up: number };
  close(): Promise<void>;
}

/** Chunks are cut to this size, so that a large read is delivered as the link would, not at once at its end. */
const PIECE = 16 * 1024;

/** One direction of the link: when what enters it now has been sent, and has arrived. */
class Direction {
  #freeAt = 0;
  bytes = 0;
  readonly #bytesPerMs: number;
  readonly #delayMs: number;
  constructor(spec: LinkSpec) {
    this.#bytesPerMs = spec.bitsPerSecond / 8 / 1000;
    this.#delayMs = spec.rttMs / 2;
  }

  /** A piece of `n` bytes enters the link now: when it arrives at the far end. */
  send(n: number): number {
    const start = Math.max(performance.now(), this.#freeAt);
    this.#freeAt = start + n / this.#bytesPerMs;
    this.bytes += n;
    return this.#freeAt + this.#delayMs;
  }

  /** Milliseconds of data waiting to be sent. */
  backlogMs(): number {
    return Math.max(0, this.#freeAt - performance.now());
  }
}

/** Carries `from`'s bytes to `to` over `link`, with backpressure on `from` when the link's queue is full. */
function carry(from: Socket, to: Socket, link: Direction, maxBacklogMs: number): void {
  const queue: { at: number; piece: Buffer }[] = [];
  let timer: NodeJS.Timeout | undefined;
  let ended = false;
  const deliver = () => {
    timer = undefined;
    const now = performance.now();
    while (queue.length > 0 && queue[0]!.at <= now) to.write(queue.shift()!.piece);
    if (queue.length > 0) timer = setTimeout(deliver, queue[0]!.at - now);
    else if (ended) to.end();
  };
  const resumeWhenDrained = () => {
    const wait = link.backlogMs() - maxBacklogMs / 2;
    if (wait > 0) setTimeout(resumeWhenDrained, wait);
    else if (!from.destroyed) from.resume();
  };
  from.on('data', (chunk: Buffer) => {
    for (let at = 0; at < chunk.length; at += PIECE) {
      const piece = chunk.subarray(at, at + PIECE);
      queue.push({ at: link.send(piece.length), piece });
    }
    timer ??= setTimeout(deliver, queue[0]!.at - performance.now());
    if (link.backlogMs() > maxBacklogMs) {
      from.pause();
      resumeWhenDrained();
    }
  });
  from.on('end', () => {
    ended = true;
    if (queue.length === 0 && timer === undefined) to.end();
  });
  // A connection that fails (a reset) fails the other side too, at once.
  from.on('error', () => to.destroy());
  from.on('close', (hadError) => {
    if (hadError) to.destroy();
  });
}

export async function startLinkProxy(target: { host: string; port: number }, spec: LinkSpec): Promise<LinkProxy> {
  const down = new Direction(spec);
  const up = new Direction(spec);
  const maxBacklogMs = Math.max(spec.rttMs, 10);
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    client.pause();
    const upstream = connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.setNoDelay(true);
      s.on('close', () => sockets.delete(s));
    }
    upstream.pause();
    // The handshake's round trip before the first bytes go.
    setTimeout(() => {
      carry(client, upstream, up, maxBacklogMs);
      carry(upstream, client, down, maxBacklogMs);
      client.resume();
      upstream.resume();
    }, spec.rttMs);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('link proxy: no port');
  return {
    port: address.port,
    bytes: () => ({ down: down.bytes, up: up.bytes }),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** In a child process: starts the proxy, sends its port, and answers `bytes` and `close` over IPC. */
export async function serveLinkProxy(target: { host: string; port: number }, spec: LinkSpec): Promise<void> {
  const proxy = await startLinkProxy(target, spec);
  process.on('message', (m: { bytes?: true; close?: true }) => {
    if (m.bytes) process.send!({ bytes: proxy.bytes() });
    if (m.close) void proxy.close().then(() => process.disconnect());
  });
  process.send!({ port: proxy.port });
}
