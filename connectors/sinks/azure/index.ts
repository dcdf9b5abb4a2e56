import { defineSink, lazyStore } from '../../../src/kit/index.ts';
import { azureConfig, type AzureConfig, azureOptions } from './options.ts';
import { parseAzureUrl } from './url.ts';

export { azureConfig, type AzureConfig, azureOptions } from './options.ts';

/**
 * Azure Blob Storage: the service's calls only (GET, PUT with `If-None-Match` / `If-Match`, block
 * uploads committed whole, HEAD, LIST, DELETE). The commit is written once over them in src/export,
 * as for S3: parts under their final names, `_manifest.json` put conditionally as the commit point.
 * Credentials: the block's or the environment's account key (`AZURE_STORAGE_KEY`), SAS
 * (`AZURE_STORAGE_SAS_TOKEN`) or connection string (`AZURE_STORAGE_CONNECTION_STRING`).
 */
export const azure = defineSink({
  type: 'azure',
  description: 'Azure Blob Storage (or ADLS Gen2), block uploads, manifest as the commit point.',
  paths: 'azure://container/prefix or abfss://container@account.dfs.core.windows.net/prefix',
  config: azureConfig,
  options: { key: 'azure', schema: azureOptions },
  // Anything that starts like an Azure URL, so a slip such as `azure:/c` is told what is wrong with it.
  accepts: (url) => /^(?:azure|abfss?):/i.test(url),
  create: (config: AzureConfig) => {
    const location = parseAzureUrl(config.url)!;
    const url = `azure://${location.container}${location.prefix ? `/${location.prefix}` : ''}`;
    // The SDK loads with the first request, so validating or listing sinks never pays for it.
    return lazyStore(url, async () => (await import('./blobStore.ts')).blobStore(location, config, url, process.env));
  },
});
