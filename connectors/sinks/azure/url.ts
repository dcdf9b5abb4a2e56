export interface AzureLocation {
  /** The storage account, when the URL names it (`abfss://container@account.dfs.core.windows.net/...`). */
  readonly account: string | undefined;
  readonly container: string;
  /** Blob name prefix without leading or trailing slash; '' for the container root. */
  readonly prefix: string;
}

// Container names: 3-63 lowercase letters, digits and single hyphens, a letter or digit at each end.
const CONTAINER = '([a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62})';
const AZURE_URL = new RegExp(`^azure://${CONTAINER}(?:/(.*))?$`);
const ABFSS_URL = new RegExp(`^abfss://${CONTAINER}@([a-z0-9]{3,24})\\.dfs\\.core\\.windows\\.net(?:/(.*))?$`);

/** Parses `azure://container/prefix` or `abfss://container@account.dfs.core.windows.net/prefix`; undefined when it is neither. */
export function parseAzureUrl(url: string): AzureLocation | undefined {
  const azure = AZURE_URL.exec(url);
  const abfss = azure ? undefined : ABFSS_URL.exec(url);
  const match = azure ?? abfss;
  if (!match) return undefined;
  const prefix = ((azure ? azure[2] : abfss?.[3]) ?? '').replace(/^\/+|\/+$/g, '');
  if (prefix.split('/').some((segment) => segment === '.' || segment === '..')) return undefined;
  return { account: abfss?.[2], container: match[1]!, prefix };
}

export function blobName(location: AzureLocation, name: string): string {
  return location.prefix === '' ? name : `${location.prefix}/${name}`;
}
