import type { CommitProtocol } from './commit.ts';
import { catalogTarget, type CatalogTarget } from './iceberg/catalog/catalogConfig.ts';
import { icebergCommit } from './iceberg/icebergCommit.ts';
import { manifestCommit, unconditionalManifestCommit } from './manifestCommit.ts';
import type { ResolvedOutput } from './outputConfig.ts';
import type { Destination } from './destination.ts';
import { openDestination } from './storage/openDestination.ts';
import type { VendedCredentials } from './iceberg/writeIcebergTable.ts';

/**
 * The commit protocol of an output (its `table`): how it becomes visible and how the next run finds
 * it. Opening an output (`openOutput`) asks here; a new table format adds one line. Returns a new
 * instance per call: an Iceberg commit holds the state of the export under way, so one instance
 * serves one opened output, whose exports run one after another.
 */
export function commitFor(output: Pick<ResolvedOutput, 'table' | 'mode' | 'partitionBy'> & Partial<Pick<ResolvedOutput, 'commit' | 'catalog' | 'sink' | 'sinkConfig'>>): CommitProtocol {
  if (output.table === 'iceberg') return icebergCommit({ mode: output.mode, partitionBy: output.partitionBy, catalog: output.catalog, reopen: reopenWith(output) });
  // `commit: unconditional`: for stores that ignore conditional writes, last writer wins.
  return output.commit === 'unconditional' ? unconditionalManifestCommit : manifestCommit;
}

/**
 * What a table output commits to, for `validate` and `--plan`: the catalog (its path, or a REST
 * catalog's URI and warehouse) and the table (its location, or its namespace and name). Undefined
 * for a manifest output, whose path says it all.
 */
export function commitTarget(output: Pick<ResolvedOutput, 'table' | 'path'> & Partial<Pick<ResolvedOutput, 'catalog'>>, url = output.path): CatalogTarget | undefined {
  return output.table === 'iceberg' ? catalogTarget(output.catalog, url) : undefined;
}

/**
 * How an S3 output is opened again with credentials a catalog vended for its table: the sink's own
 * settings with the static credentials replaced. Other sinks take no vended credentials here.
 */
function reopenWith(output: Partial<Pick<ResolvedOutput, 'sink' | 'sinkConfig'>>): ((credentials: VendedCredentials) => Destination) | undefined {
  const { sink, sinkConfig } = output;
  if (sink?.type !== 's3' || sinkConfig === undefined) return undefined;
  return (credentials) =>
    openDestination({
      sink,
      sinkConfig: { ...(sinkConfig as object), profile: undefined, access_key_id: credentials.accessKeyId, secret_access_key: credentials.secretAccessKey, session_token: credentials.sessionToken },
    });
}
