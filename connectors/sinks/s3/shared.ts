import { type BeginOptions, DestinationError, PreconditionFailedError, type SharedArea, type Transaction } from '../../../src/kit/index.ts';
import { ConditionFailed, type ObjectStore, uploadCounted } from './objectStore.ts';
import { keyOf, type S3Location } from './url.ts';

/**
 * The shared staging of a sharded export under an S3 prefix. Parts are uploaded under their final
 * keys (a multipart upload appears only when complete, so a key holds a whole part or nothing); they
 * are invisible as output until the manifest lists them. Records live under
 * `<prefix>/.sluice-shards/<id>/`, created with `If-None-Match: *`. The committer's transaction adopts
 * the parts (published by its commit, never deleted by its abort); parts no commit lists are removed
 * by the next commit at the prefix, as a killed run's are.
 */
export function s3SharedArea(
  location: S3Location,
  store: ObjectStore,
  url: string,
  id: string,
  begin: (options: BeginOptions, files: readonly string[]) => Transaction,
): SharedArea {
  const recordsPrefix = `.sluice-shards/${id}/`;
  const recordKey = (name: string): string => keyOf(location, `${recordsPrefix}${name}`);
  const areaUrl = `${url}/${recordsPrefix.slice(0, -1)}`;
  const fail = (action: string, error: unknown): never => {
    throw new DestinationError(areaUrl, action, error, true);
  };
  return {
    url: areaUrl,
    async create(name, body) {
      try {
        await store.put(recordKey(name), body, 'application/json', { ifAbsent: true });
      } catch (error) {
        if (error instanceof ConditionFailed) throw new PreconditionFailedError(areaUrl, name, `${name} exists already`, error);
        fail(`creating ${name} in`, error);
      }
    },
    async save(name, body) {
      try {
        await store.put(recordKey(name), body, 'application/json');
      } catch (error) {
        fail(`saving ${name} in`, error);
      }
    },
    async read(name, signal) {
      try {
        return await store.get(recordKey(name), signal);
      } catch (error) {
        return fail(`reading ${name} from`, error);
      }
    },
    async list(prefix, signal) {
      const base = recordKey('');
      try {
        return (await store.list(`${base}${prefix}`, signal)).map((k) => k.slice(base.length)).sort();
      } catch (error) {
        return fail('listing the records of', error);
      }
    },
    async write(name, body, options = {}) {
      let bytes = 0;
      try {
        bytes = await uploadCounted(store, keyOf(location, name), body, options);
      } catch (error) {
        if (options.signal?.aborted) throw options.signal.reason;
        fail(`uploading ${name} to`, error);
      }
      return { bytes };
    },
    async size(name, signal) {
      try {
        return await store.head(keyOf(location, name), signal);
      } catch (error) {
        return fail(`checking ${name} at`, error);
      }
    },
    async begin(options, files) {
      return begin(options, files);
    },
    async remove(signal) {
      try {
        await store.delete(await store.list(recordKey(''), signal));
      } catch (error) {
        fail('removing the records of', error);
      }
    },
  };
}
