import { z } from 'zod';
import { parseAzureUrl } from './url.ts';

// The Azure sink's settings, apart from its implementation: validating a job file loads this file
// and zod, never the Azure SDK.

/** Azure settings other than the URL; the export's `azure:` block. Credentials usually come from the environment. */
export const azureOptions = z.strictObject({
  account: z.string().regex(/^[a-z0-9]{3,24}$/, 'expected a storage account name (3-24 lowercase letters and digits)').optional().describe('Storage account; defaults to the one an abfss:// URL names, then AZURE_STORAGE_ACCOUNT.'),
  endpoint: z.url().optional().describe('Blob service endpoint, for another cloud or a local emulator (azurite); default https://<account>.blob.core.windows.net.'),
  account_key: z.string().min(1).optional().describe('Shared key of the account; usually leave unset and set AZURE_STORAGE_KEY.'),
  sas_token: z.string().min(1).optional().describe('Shared access signature (the query string, with or without ?); usually leave unset and set AZURE_STORAGE_SAS_TOKEN.'),
  connection_string: z.string().min(1).optional().describe('A connection string; usually leave unset and set AZURE_STORAGE_CONNECTION_STRING.'),
  block_size_mb: z.int().min(1).max(4000).default(8).describe('Block size of a streamed upload in MiB.'),
  concurrency: z.int().min(1).max(32).default(4).describe('Blocks uploaded concurrently per blob.'),
});

export const azureConfig = azureOptions
  .extend({
    url: z
      .string()
      .superRefine((url, ctx) => {
        if (parseAzureUrl(url) === undefined) {
          ctx.addIssue({ code: 'custom', message: 'expected azure://container/prefix or abfss://container@account.dfs.core.windows.net/prefix (a container name of 3-63 lowercase letters, digits and hyphens; no . or .. segments)' });
        }
      })
      .describe('Where the export lives: azure://container/prefix or abfss://container@account.dfs.core.windows.net/prefix.'),
  })
  .refine((c) => [c.account_key, c.sas_token, c.connection_string].filter((v) => v !== undefined).length <= 1, {
    message: 'account_key, sas_token and connection_string are alternatives: give one of them, or none and set one in the environment',
    path: ['account_key'],
  });
export type AzureConfig = z.output<typeof azureConfig>;
