import { resolve } from 'node:path';
import type { Writable } from 'node:stream';
import { builtins } from '../../../connectors/index.ts';
import { DEFAULT_STATE_DIR } from '../../config/jobSchema.ts';
import { loadJobFile } from '../../config/loadJobFile.ts';
import { defineCommand, flag, listOption, stringOption, type OptionValues } from '../command.ts';
import { CONNECTION_OPTIONS, connectFromFlags, connectLogged } from '../connection.ts';
import { packageVersion } from '../dispatch.ts';
import { EXIT } from '../exitCodes.ts';
import { UsageError } from '../usageError.ts';
// The budgets' module loads no MCP SDK: `sluice --help` stays as light as before.
import { DEFAULT_CALL_CREDITS, DEFAULT_SESSION_CREDITS } from '../../mcp/budget.ts';
import type { McpServerContext } from '../../mcp/context.ts';

const DEFAULT_PORT = 8765;

export const mcpCommand = defineCommand({
  name: 'mcp',
  summary: 'Serve the Model Context Protocol to agents over stdio (or streamable HTTP): plan, preview, export, run jobs under a credit budget',
  args: '[FILE]',
  maxArgs: 1,
  // SIGTERM or SIGINT is how a server over HTTP is stopped: calls in flight stop, and it exits 0.
  handlesSignals: true,
  options: {
    'allow-output': { type: 'string', multiple: true, valueName: 'DIR|s3://B/P', description: 'A directory or object-store prefix export may write under (repeatable; none: export writes nowhere)' },
    'max-credits': { type: 'string', valueName: 'N', description: `Credits one session may spend in all (default ${DEFAULT_SESSION_CREDITS})` },
    'max-call-credits': { type: 'string', valueName: 'N', description: `Credits one tool call may spend (default ${DEFAULT_CALL_CREDITS})` },
    'read-only': { type: 'boolean', description: 'Offer no tool that writes (no export, no run_job)' },
    http: { type: 'boolean', description: 'Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio' },
    host: { type: 'string', valueName: 'HOST', description: 'With --http: the address to listen on', default: '127.0.0.1' },
    port: { type: 'string', valueName: 'N', description: `With --http: the port (0: any free one)`, default: String(DEFAULT_PORT) },
    'token-env': { type: 'string', valueName: 'NAME', description: 'With --http: the environment variable holding a token every request must send as Authorization: Bearer <token>' },
    'state-dir': { type: 'string', valueName: 'DIR', description: `Without FILE: where the run history goes (default ${DEFAULT_STATE_DIR})` },
    ...CONNECTION_OPTIONS,
  },
  details: [
    'FILE is a job file: its connection (the embedded local service when it has no base_url), its',
    'state_dir (the run history, where every call is recorded with origin "mcp") and its jobs (run_job).',
    'Without FILE, the connection options below and SERVICE_BASE_URL / SERVICE_API_KEY apply, as for `sluice query`.',
    'Guard rails hold whatever an agent asks: the credit budgets (a call over them is refused with its plan,',
    'nothing executed), the output allowlist, read-only mode. Logs go to stderr; stdout carries the protocol.',
    '',
    'Examples:',
    '  sluice mcp --allow-output ./out',
    '  sluice mcp jobs.yaml --allow-output s3://bucket/agents --max-credits 200',
    '  sluice mcp --http --port 8765 --read-only',
  ].join('\n'),
  async run({ io, values, positionals, log, signal }) {
    const credits = { session: count(values, 'max-credits', DEFAULT_SESSION_CREDITS), call: count(values, 'max-call-credits', DEFAULT_CALL_CREDITS) };
    const port = count(values, 'port', DEFAULT_PORT);
    const host = stringOption(values, 'host') ?? '127.0.0.1';
    const token = httpToken(values, io.env);
    const file = positionals[0];
    // The values a job file's ${VAR} references read are treated as secrets (mcp/secrets.ts).
    const variablesRead = new Set<string>();
    const jobFile = file === undefined ? undefined : await loadJobFile(file, { registry: builtins, env: io.env, cwd: io.cwd, variablesRead });
    if (jobFile !== undefined) {
      // --data-dir and --api-key-env have defaults, so only these can be told apart from not given.
      const flags = ['base-url', 'sample-rows', 'settings', 'state-dir'].filter((name) => values[name] !== undefined);
      if (flags.length > 0) throw new UsageError(`${flags.map((f) => `--${f}`).join(', ')}: the job file's connection and state_dir apply; leave them out or leave out FILE`);
    }
    const mcp = await import('../../mcp/index.ts');
    const connection = jobFile === undefined
      ? await connectFromFlags(values, io, log, signal)
      : await connectLogged(jobFile.connection, io, log, signal);
    try {
      const secrets = new mcp.Secrets([connection.client.connectionOptions().apiKey, token], io.env, variablesRead);
      const context: McpServerContext = {
        client: connection.client,
        embedded: connection.embedded,
        registry: builtins,
        jobs: jobFile?.jobs ?? [],
        stateDir: resolve(io.cwd, jobFile?.state_dir ?? stringOption(values, 'state-dir') ?? DEFAULT_STATE_DIR),
        cwd: io.cwd,
        settings: { readOnly: flag(values, 'read-only'), allowlist: new mcp.OutputAllowlist(listOption(values, 'allow-output'), io.cwd), credits },
        log: secrets.log(log),
        secrets,
        signal,
        serialExport: serial(),
      };
      log.info('MCP guard rails', { read_only: context.settings.readOnly, allow_output: context.settings.allowlist.entries.join(', ') || '(none)', session_credits: credits.session, call_credits: credits.call });
      if (flag(values, 'http')) {
        if (!mcp.isLoopback(host) && token === undefined) log.warn('serving MCP on a non-loopback address: anyone who can reach it can spend the credits and write the allowed outputs', { host });
        const { serveHttp } = await import('../../mcp/http.ts');
        await serveHttp(context, packageVersion(), { host, port, token, onListening: (url) => log.info(`listening on ${url}`, { url }) });
      } else {
        await mcp.serveStdio(context, packageVersion(), io.stdin, io.stdout as unknown as Writable);
      }
    } finally {
      await connection.close();
    }
    return EXIT.ok;
  },
});

/** The bearer token HTTP clients must send (--token-env), checked before anything starts. */
function httpToken(values: OptionValues, env: Readonly<Record<string, string | undefined>>): string | undefined {
  const name = stringOption(values, 'token-env');
  if (name === undefined) return undefined;
  if (!flag(values, 'http')) throw new UsageError('--token-env goes with --http: over stdio, the client that starts the server is its only client');
  const token = env[name];
  if (token === undefined || token === '') throw new UsageError(`--token-env ${name}: the environment variable is not set`);
  return token;
}

function count(values: OptionValues, name: string, fallback: number): number {
  const text = stringOption(values, name);
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text)) throw new UsageError(`--${name} must be a whole number, got ${JSON.stringify(text)}`);
  return Number(text);
}

/** Runs each function after the ones before it have settled. */
function serial(): <T>(fn: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>): Promise<T> => {
    const next = tail.then(fn, fn);
    tail = next.catch(() => undefined);
    return next;
  };
}
