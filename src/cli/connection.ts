import type { OptionSpec, OptionValues } from './command.ts';
import { stringOption } from './command.ts';
import type { CliIo } from './io.ts';
import type { Logger } from './log.ts';
import { connect, type Connected } from '../jobs/run/connect.ts';
import type { Connection } from '../config/jobSchema.ts';
import { UsageError } from './usageError.ts';
import { currentTelemetry } from '../telemetry/index.ts';

/** Options of every command that talks to the service. */
export const CONNECTION_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  'base-url': { type: 'string', valueName: 'URL', description: 'Service URL (default $SERVICE_BASE_URL; unset: the embedded local service)' },
  'api-key-env': { type: 'string', valueName: 'NAME', description: 'Environment variable holding the API key', default: 'SERVICE_API_KEY' },
  'data-dir': { type: 'string', valueName: 'DIR', description: 'Data directory of the embedded local service', default: '.sluice/service' },
  settings: { type: 'string', valueName: 'FILE', description: "Settings file of the embedded local service, as a job file's connection.embedded.settings (read over the embedded defaults): give the job's, so that its teams, keys and bounds apply" },
  'sample-rows': { type: 'string', valueName: 'N', description: 'Rows of sample.events in the embedded service: created with N rows, or rebuilt if it holds another count (unset: 1,000,000 when created; an existing table is kept)' },
};

/** Connects as the flags and the environment say (the same rules as a job file's `connection`). */
export async function connectFromFlags(values: OptionValues, io: CliIo, log: Logger, signal: AbortSignal): Promise<Connected> {
  const sampleRows = stringOption(values, 'sample-rows');
  if (sampleRows !== undefined && !/^\d+$/.test(sampleRows)) throw new UsageError(`--sample-rows must be a whole number, got ${JSON.stringify(sampleRows)}`);
  const baseUrl = stringOption(values, 'base-url') ?? io.env.SERVICE_BASE_URL;
  const settings = stringOption(values, 'settings');
  return connectLogged(
    {
      ...(baseUrl ? { base_url: baseUrl } : {}),
      api_key_env: stringOption(values, 'api-key-env') ?? 'SERVICE_API_KEY',
      embedded: {
        data_dir: stringOption(values, 'data-dir') ?? '.sluice/service',
        ...(sampleRows === undefined ? {} : { sample_rows: Number(sampleRows) }),
        ...(settings === undefined ? {} : { settings }),
      },
    },
    io,
    log,
    signal,
  );
}

/** Connects as a job file's `connection` says, logging which embedded service is used. */
export function connectLogged(connection: Connection | undefined, io: CliIo, log: Logger, signal: AbortSignal, ownFolder = false, rateShare = 1): Promise<Connected> {
  return connect(connection, {
    env: io.env,
    rateShare,
    cwd: io.cwd,
    signal,
    ownFolder,
    clientHooks: currentTelemetry()?.client,
    onWaiting: ({ dataDir, pid }) => log.warn('the data folder is served by another process: waiting for it to finish (a long-running command uses only its own service)', { data_dir: dataDir, pid }),
    onEmbedded: ({ url, dataDir, notices }) => {
      log.info('started the embedded local service', { url, data_dir: dataDir });
      for (const notice of notices) log.info(notice, { data_dir: dataDir });
    },
    onShared: ({ url, dataDir, pid, ignoredSampleRows }) => {
      log.info("using the data folder's service, run by another process", { url, data_dir: dataDir, pid });
      if (ignoredSampleRows !== undefined) {
        log.warn(
          `embedded.sample_rows (${ignoredSampleRows}) is ignored: process ${pid} already serves ${dataDir} with the sample.events it made; stop that process, or give this job another embedded.data_dir, to get ${ignoredSampleRows} rows`,
          { data_dir: dataDir, pid, sample_rows: ignoredSampleRows },
        );
      }
    },
  });
}

/** Runs `fn` with a connection and always closes it. */
export async function withConnection<T>(values: OptionValues, io: CliIo, log: Logger, signal: AbortSignal, fn: (c: Connected) => Promise<T>): Promise<T> {
  const connection = await connectFromFlags(values, io, log, signal);
  try {
    return await fn(connection);
  } finally {
    await connection.close();
  }
}
