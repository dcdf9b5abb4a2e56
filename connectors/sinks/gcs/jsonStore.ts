import { ConfigError, DestinationCheckError, type ObjectStore } from '../../../src/kit/index.ts';
import { type Call, gcsApi } from './api.ts';
import type { GcsConfig } from './options.ts';
import { mediaUpload, streamedUpload, type Upload } from './resumable.ts';
import { type GcsLocation, objectName } from './url.ts';

const DELETES_IN_FLIGHT = 16;

/**
 * Cloud Storage through its JSON API over undici, with google-auth-library for credentials only
 * (docs/gcs.md says why not the @google-cloud/storage client). A version is an object's
 * generation: a create-only put sends `ifGenerationMatch=0`, a replace the generation it read, and
 * Google answers 412 when that no longer holds.
 */
export function jsonStore(location: GcsLocation, config: GcsConfig, url: string, env: NodeJS.ProcessEnv): ObjectStore {
  const api = gcsApi(config, url, env);
  const bucket = `/storage/v1/b/${encodeURIComponent(location.bucket)}`;
  const objectPath = (name: string) => `${bucket}/o/${encodeURIComponent(objectName(location, name))}`;
  const base = location.prefix === '' ? '' : `${location.prefix}/`;
  const call = (method: Call['method'], name: string, path: string, what: string, extra: Partial<Call> = {}): Call => ({ method, path, what: `${what} ${name} on`, ...extra });
  return {
    url,
    async get(name, signal) {
      const request = call('GET', name, objectPath(name), 'reading', { query: { alt: 'media' }, signal });
      const answer = await api.send(request);
      if (answer.status === 404) return void (await answer.body.dump());
      if (answer.status !== 200) throw await api.fail(request, answer);
      return { body: new Uint8Array(await answer.body.arrayBuffer()), version: String(answer.headers['x-goog-generation']) };
    },
    async put(name, body, { condition, contentType, signal } = {}) {
      const ifGenerationMatch = condition === undefined ? undefined : 'ifAbsent' in condition ? '0' : condition.ifVersion;
      const upload: Upload = {
        api,
        url,
        bucket: location.bucket,
        name,
        object: objectName(location, name),
        query: { ifGenerationMatch },
        contentType: contentType ?? 'application/octet-stream',
        chunkSize: config.chunk_size_mb * 1024 * 1024,
        signal,
      };
      return body instanceof Uint8Array ? mediaUpload(upload, body) : streamedUpload(upload, body);
    },
    async head(name, signal) {
      const request = call('GET', name, objectPath(name), 'reading the metadata of', { query: { fields: 'size,generation,updated' }, signal });
      const answer = await api.send(request);
      if (answer.status === 404) return void (await answer.body.dump());
      if (answer.status !== 200) throw await api.fail(request, answer);
      const meta = (await answer.body.json()) as { size?: unknown; generation?: unknown; updated?: unknown };
      return { size: Number(meta.size), version: String(meta.generation), modified: Date.parse(String(meta.updated)) };
    },
    async list(prefix, signal) {
      const names: string[] = [];
      let pageToken: string | undefined;
      do {
        const request = call('GET', `${prefix}*`, `${bucket}/o`, 'listing', { query: { prefix: `${base}${prefix}`, pageToken, fields: 'items(name),nextPageToken' }, signal });
        const answer = await api.send(request);
        if (answer.status !== 200) throw await api.fail(request, answer);
        const page = (await answer.body.json()) as { items?: { name: string }[]; nextPageToken?: string };
        for (const item of page.items ?? []) names.push(item.name.slice(base.length));
        pageToken = page.nextPageToken;
      } while (pageToken !== undefined);
      return names;
    },
    async delete(names, signal) {
      const remove = async (name: string) => {
        const request = call('DELETE', name, objectPath(name), 'deleting', { signal });
        const answer = await api.send(request);
        if (answer.status !== 204 && answer.status !== 200 && answer.status !== 404) throw await api.fail(request, answer);
        await answer.body.dump();
      };
      // Bounded: a sweep of thousands of parts must not open thousands of requests at once.
      for (let i = 0; i < names.length; i += DELETES_IN_FLIGHT) await Promise.all(names.slice(i, i + DELETES_IN_FLIGHT).map(remove));
    },
    async check(signal) {
      // Listing (one name) needs only the object permissions a run needs anyway, not storage.buckets.get.
      const request = call('GET', location.prefix || '/', `${bucket}/o`, 'listing', { query: { prefix: base, maxResults: '1', fields: 'items(name)' }, signal });
      const answer = await api.send(request);
      if (answer.status === 200) return void (await answer.body.dump());
      const error = await api.fail(request, answer);
      if (answer.status === 401 || answer.status === 403) throw new ConfigError(`${url}: the Google credentials were refused (${answer.status}): ${error.message}; the account needs roles/storage.objectAdmin on the bucket (or storage.objects.create, get, list and delete)`, { cause: error });
      throw new DestinationCheckError(url, answer.status === 404 ? `the bucket ${location.bucket} does not exist` : `the bucket ${location.bucket} did not answer (${error.message})`, error);
    },
    async close() {},
  };
}
