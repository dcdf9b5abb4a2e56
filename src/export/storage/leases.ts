import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { type ObjectStore, PreconditionFailedError } from '../../kit/index.ts';
import { processRuns as processRunsHere } from '../../kit/index.ts';

/**
 * A writer's lease at an output: an object in the output's private area (`.sluice-lease-<id>`) that
 * says a writer is alive and may still commit what it wrote. Taken before its first write, renewed
 * while it runs, removed after its commit or abort. The sweep removes nothing a writer with a live
 * lease may still list (see `sweep.ts`); a committer whose lease is gone (taken for dead) publishes
 * nothing.
 *
 * Alive: renewed within `LEASE_TTL_MS`, and, on this host, its process still runs (a killed writer
 * on the same machine is known dead at once, on another only once the lease expires).
 */
export const LEASE_PREFIX = '.sluice-lease-';
/** How often a lease is renewed, and after how long without renewal it is dead. */
export const LEASE_RENEW_MS = 20_000;
export const LEASE_TTL_MS = 120_000;

interface LeaseBody {
  readonly host: string;
  readonly pid: number;
  readonly token: string;
  /** A table writer's token: the sweep finds the parts of a dead writer by it. */
  readonly tag?: string;
}

export interface Lease {
  readonly id: string;
  /**
   * Settles once the lease is stored (rejects when it could not be). A writer's first object must
   * not become visible before it: a write awaits it at the end of its body, since every store makes
   * an object visible only once its body is complete, so the lease's put overlaps the first write.
   */
  readonly taken: Promise<void>;
  /** Whether the lease is still this writer's: present and not taken over. */
  held(signal?: AbortSignal): Promise<boolean>;
  /** Stops renewing; with `remove`, deletes the lease (a stop that leaves it lets it expire). */
  release(remove: boolean): Promise<void>;
}

/**
 * Starts taking the lease `id` in `area` and returns at once (see `Lease.taken`). Not cut short by
 * a signal: a put the store completed after the client gave up would be a lease nobody removes.
 */
export function takeLease(area: ObjectStore, id: string, tag?: string): Lease {
  const name = `${LEASE_PREFIX}${id}`;
  const mine: LeaseBody = { host: hostname(), pid: process.pid, token: randomBytes(8).toString('hex'), ...(tag === undefined ? {} : { tag }) };
  const body = new TextEncoder().encode(`${JSON.stringify(mine)}\n`);
  // When the last put of the lease that succeeded began (this process's clock).
  let renewedAt: number | undefined;
  // A lease needs no durability: a crash of the machine ends its writer too.
  const put = async (): Promise<void> => {
    const started = Date.now();
    await area.put(name, body, { contentType: 'application/json', durable: false });
    renewedAt = started;
  };
  const taken = put();
  taken.catch(() => undefined); // awaited by the writer; this only keeps a failure from going unhandled meanwhile
  let renewing: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    renewing = taken.then(put).catch(() => undefined);
  }, LEASE_RENEW_MS);
  timer.unref();
  let released = false;
  heldHere.add(mine.token);
  return {
    id,
    taken,
    async held(s) {
      await taken;
      // Written less than half a lifetime ago by this running process: no sweep can have taken it
      // for dead (a sweep on this host sees the process run, one elsewhere sees it renewed), so it
      // is not read back.
      if (renewedAt !== undefined && Date.now() - renewedAt < LEASE_TTL_MS / 2) return true;
      const found = await area.get(name, s);
      return found !== undefined && parseLease(found.body)?.token === mine.token;
    },
    async release(remove) {
      if (released) return;
      released = true;
      heldHere.delete(mine.token);
      clearInterval(timer);
      await renewing;
      const stored = await taken.then(() => true, () => false);
      if (remove && stored) await area.delete([name]);
    },
  };
}

/**
 * The ids of live leases in `area`, and the names of dead ones (to remove once their objects are),
 * with the tags of the dead ones that carry one.
 */
export async function leasesOf(area: ObjectStore, signal?: AbortSignal): Promise<{ live: Set<string>; dead: string[]; tags: Map<string, string> }> {
  const live = new Set<string>();
  const dead: string[] = [];
  const tags = new Map<string, string>();
  const names = (await area.list(LEASE_PREFIX, signal)).filter((n) => !n.includes('/'));
  await Promise.all(
    names.map(async (name) => {
      const [info, found] = await Promise.all([area.head(name, signal), area.get(name, signal)]);
      if (info === undefined || found === undefined) return; // released meanwhile
      const body = parseLease(found.body);
      const expired = Date.now() - info.modified > LEASE_TTL_MS;
      if (!expired && (body === undefined || processRuns(body))) return void live.add(name.slice(LEASE_PREFIX.length));
      dead.push(name);
      if (body?.tag !== undefined) tags.set(name, body.tag);
    }),
  );
  return { live, dead, tags };
}

/** Fails loudly when this writer's lease is gone: a sweep took it for dead and may have removed what it wrote. */
export async function mustHold(lease: Lease, url: string, signal?: AbortSignal): Promise<void> {
  if (await lease.held(signal)) return;
  throw new PreconditionFailedError(url, `${LEASE_PREFIX}${lease.id}`, 'this run was taken for dead (its lease expired or was removed) and may have lost what it wrote; nothing was published, run it again');
}

function parseLease(bytes: Uint8Array): LeaseBody | undefined {
  try {
    const value = JSON.parse(new TextDecoder().decode(bytes)) as Partial<LeaseBody>;
    if (typeof value.host !== 'string' || typeof value.pid !== 'number' || typeof value.token !== 'string') return undefined;
    return { host: value.host, pid: value.pid, token: value.token, ...(typeof value.tag === 'string' ? { tag: value.tag } : {}) };
  } catch {
    return undefined;
  }
}

/** The tokens of the leases this process holds now. */
const heldHere = new Set<string>();

/** Whether the writer still runs: another host's is taken as running (its lease expires instead). */
function processRuns(body: LeaseBody): boolean {
  if (body.host !== hostname()) return true;
  if (body.pid === process.pid) return heldHere.has(body.token);
  return processRunsHere(body.pid);
}
