import { parseArgs } from 'node:util';
import { startService } from '../../service/index.ts';
import { SettingsError } from '../../service/settings.ts';
import { commandUsage } from '../help.ts';
import { shouldWatchParent, watchParent } from '../parentWatch.ts';
import { SERVE_OPTIONS, SERVE_SUMMARY } from './serveOptions.ts';

/** `serve` parses its own arguments; the CLI table wraps it as a passthrough command. */
interface ServeCommand {
  name: string;
  summary: string;
  usage: string;
  run(argv: string[]): Promise<number>;
}

const USAGE = `usage: ${commandUsage({ name: 'serve', options: SERVE_OPTIONS, summary: SERVE_SUMMARY, run: async () => 0 })} (see --help)`;

export const serveCommand: ServeCommand = {
  name: 'serve',
  summary: 'run the local query service',
  usage: USAGE,
  async run(argv) {
    let values: { host: string; port: string; 'data-dir': string; config?: string | undefined };
    try {
      ({ values } = parseArgs({
        args: argv,
        strict: true,
        options: {
          host: { type: 'string', default: SERVE_OPTIONS.host.default },
          port: { type: 'string', default: SERVE_OPTIONS.port.default },
          'data-dir': { type: 'string', default: SERVE_OPTIONS['data-dir'].default },
          config: { type: 'string' },
        },
      }));
    } catch (err) {
      process.stderr.write(`sluice serve: ${(err as Error).message}\n${USAGE}\n`);
      return 2;
    }
    const port = Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      process.stderr.write(`sluice serve: --port must be an integer from 0 to 65535, got "${values.port}"\n`);
      return 2;
    }
    let service;
    try {
      service = await startService({
        host: values.host,
        port,
        dataDir: values['data-dir'],
        ...(values.config === undefined ? {} : { settings: values.config }),
        // Jobs without a base_url on the same data folder use this service (over loopback).
        advertise: {},
        onNotice: (message) => process.stderr.write(`sluice serve: ${message}\n`),
      });
    } catch (err) {
      process.stderr.write(`sluice serve: ${err instanceof SettingsError ? err.message : String(err)}\n`);
      return 1;
    }
    if (service.generatedKey !== undefined) {
      process.stdout.write(`generated API key (team demo, Admin scope; set SERVICE_API_KEY to choose one): ${service.generatedKey}\n`);
    }
    process.stdout.write(`listening on ${service.url}\n`);
    let unwatch = (): void => undefined;
    const signal = await new Promise<string>((resolve) => {
      process.once('SIGTERM', () => resolve('SIGTERM'));
      process.once('SIGINT', () => resolve('SIGINT'));
      // Under npx or npm, a stopped wrapper does not pass SIGTERM on (../parentWatch.ts).
      if (shouldWatchParent(process.env)) unwatch = watchParent((parent) => resolve(`parent process ${parent} gone`));
    });
    unwatch();
    process.stdout.write(`${signal}: stopping (send it again to stop at once)\n`);
    // A second signal stops the engine at once (interrupting what runs) and exits 130; never
    // under a native call in flight, which would abort the process.
    const again = (): void => {
      void service.halt().finally(() => process.exit(130));
    };
    process.once('SIGTERM', again);
    process.once('SIGINT', again);
    await service.close();
    process.off('SIGTERM', again);
    process.off('SIGINT', again);
    return 0;
  },
};
