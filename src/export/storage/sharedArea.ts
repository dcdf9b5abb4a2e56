import { randomBytes } from 'node:crypto';
import { DestinationError, PreconditionFailedError } from '../../kit/index.ts';
import type { SharedArea } from '../destination.ts';
import { type Lease, LEASE_PREFIX, takeLease } from './leases.ts';
import { dataStore, type Place } from './place.ts';
import { beginTransaction, removeFolder } from './transaction.ts';

/**
 * The shared staging of a sharded export `id`: records under `.sluice-shards/<id>/` of the private
 * area (created create-only, saved whole), parts at their final names in place, or in the folder
 * `s-<id>` of a linked store, which the one commit swaps in. Each process writing parts holds a
 * lease (`s-<id>~...`) while its destination is open, so no sweep takes them meanwhile.
 */
export function storeSharedArea(place: Place, id: string, leases: Set<Lease>): SharedArea {
  const records = `.sluice-shards/${id}/`;
  const folder = `s-${id}`;
  const data = dataStore(place, folder);
  const areaUrl = `${place.url}/${records.slice(0, -1)}`;
  let lease: Lease | undefined;
  const leased = (): Promise<void> => {
    if (lease === undefined) {
      lease = takeLease(place.area, `${folder}~${randomBytes(4).toString('hex')}`);
      leases.add(lease);
    }
    return lease.taken;
  };
  const fail = (action: string, error: unknown): never => {
    if (error instanceof PreconditionFailedError) throw error;
    throw new DestinationError(areaUrl, action, error, true);
  };
  return {
    url: areaUrl,
    async create(name, body, signal) {
      await place.area.put(`${records}${name}`, body, { condition: { ifAbsent: true }, contentType: 'application/json', signal }).catch((error: unknown) => fail(`creating ${name} in`, error));
    },
    async save(name, body, signal) {
      await place.area.put(`${records}${name}`, body, { contentType: 'application/json', signal }).catch((error: unknown) => fail(`saving ${name} in`, error));
    },
    async read(name, signal) {
      try {
        return (await place.area.get(`${records}${name}`, signal))?.body;
      } catch (error) {
        return fail(`reading ${name} from`, error);
      }
    },
    async list(prefix, signal) {
      try {
        return (await place.area.list(`${records}${prefix}`, signal)).map((n) => n.slice(records.length)).sort();
      } catch (error) {
        return fail('listing the records of', error);
      }
    },
    async write(name, body, options = {}) {
      try {
        await leased();
        return { bytes: (await data.put(name, body, { contentType: options.contentType, signal: options.signal })).bytes };
      } catch (error) {
        if (options.signal?.aborted) throw options.signal.reason;
        return fail(`writing ${name} to`, error);
      }
    },
    async size(name, signal) {
      try {
        return (await data.head(name, signal))?.size;
      } catch (error) {
        return fail(`checking ${name} at`, error);
      }
    },
    async begin(options, files) {
      const tx = await beginTransaction(place, options, { files, ...(place.link ? { folder } : {}) });
      return {
        ...tx,
        async commit(markers) {
          await tx.commit(markers);
          // Committed: the parts this process wrote for it need no protection any more.
          const mine = [...leases].filter((l) => l.id.startsWith(`${folder}~`));
          for (const l of mine) leases.delete(l);
          await Promise.allSettled(mine.map((l) => l.release(true)));
        },
      };
    },
    async remove(signal) {
      try {
        // The export is committed: its records go, and the leases of every process that wrote its parts.
        const leases = (await place.area.list(`${LEASE_PREFIX}${folder}~`, signal)).filter((n) => !n.includes('/'));
        await place.area.delete([...(await place.area.list(records, signal)), ...leases], signal);
        if (lease !== undefined) await lease.release(false);
        // Linked: the folder goes unless it is the output now (the commit swapped it in).
        if (place.link && (await place.link.target(signal)) !== `v/${folder}/`) await removeFolder(place, folder, signal);
      } catch (error) {
        fail('removing the records of', error);
      }
    },
  };
}
