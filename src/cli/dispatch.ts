import { createRequire } from 'node:module';
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import { closest } from '../kit/closest.ts';
import type { Command, OptionSpec, OptionValues } from './command.ts';
import { EXIT, exitCodeOf } from './exitCodes.ts';
import { commandHelp, commandUsage, mainHelp } from './help.ts';
import { processIo, type CliIo } from './io.ts';
import { createLogger, resolveLogFormat, type Logger } from './log.ts';
import { UsageError } from './usageError.ts';
import { shouldWatchParent, watchParent } from './parentWatch.ts';
import { exitAfterHooks } from '../exitHooks.ts';

/** Options every command takes. */
export const COMMON_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  help: { type: 'boolean', short: 'h', description: 'Show the help of this command' },
  'log-format': { type: 'string', valueName: 'text|json', description: 'Log lines on stderr: text, or one JSON object per line (default: json unless stderr is a terminal)' },
  quiet: { type: 'boolean', short: 'q', description: 'Log warnings and errors only' },
};

export interface RunCliOptions {
  readonly io?: CliIo;
  /** Supplied by tests; otherwise SIGINT/SIGTERM of this process abort the command. */
  readonly signal?: AbortSignal;
}

/** The package's own package.json by name (self-reference), so it resolves from src/ and from dist/ alike. */
export function packageVersion(): string {
  const pkg = createRequire(import.meta.url)('sluice/package.json') as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
}

/** Finds the command, parses its options, runs it, and maps what it throws to an exit code. */
export async function dispatch(commands: readonly Command[], argv: readonly string[], options: RunCliOptions = {}): Promise<number> {
  const io = options.io ?? processIo();
  const answered = answerTopLevel(commands, argv, io);
  if (answered !== undefined) return answered;
  const found = findCommand(commands, argv);
  if (!found) {
    io.stderr.write(`error: ${unknownCommandText(commands, argv[0]!)}\n`);
    return EXIT.config;
  }
  const { command, rest } = found;
  if (command.passthrough) {
    // It parses its own arguments, but its help is every command's: its options, none of the common ones.
    if (rest.includes('--help') || rest.includes('-h')) {
      io.stdout.write(commandHelp(command, {}));
      return EXIT.ok;
    }
    return command.passthrough([...rest]);
  }
  const parsed = parseCommandLine(command, rest, io);
  return typeof parsed === 'number' ? parsed : runCommand(command, parsed, io, options.signal);
}

/** `sluice`, `sluice --help`, `sluice help <command>` and `sluice --version`: the exit code, or undefined for a command. */
function answerTopLevel(commands: readonly Command[], argv: readonly string[], io: CliIo): number | undefined {
  const first = argv[0];
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    const target = first === 'help' ? findCommand(commands, argv.slice(1)) : undefined;
    io.stdout.write(target ? commandHelp(target.command, target.command.passthrough ? {} : COMMON_OPTIONS) : mainHelp(commands, packageVersion()));
    return first === undefined ? EXIT.config : EXIT.ok;
  }
  if (first === '--version' || first === '-V' || first === 'version') {
    io.stdout.write(`${packageVersion()}\n`);
    return EXIT.ok;
  }
  return undefined;
}

function unknownCommandText(commands: readonly Command[], first: string): string {
  const group = commands.filter((c) => c.name.startsWith(`${first} `));
  return group.length > 0
    ? `sluice ${first}: expected a subcommand: ${group.map((c) => c.name.split(' ')[1]).join(', ')}`
    : `unknown command "${first}" (run \`sluice --help\` for the list)`;
}

/** A command's arguments as parsed and checked. */
interface CommandLine {
  readonly values: OptionValues;
  readonly positionals: string[];
  readonly logFormat: 'text' | 'json' | undefined;
}

/** Parses and checks a command's options and arguments; the exit code when it stops there (an error said, or its help). */
function parseCommandLine(command: Command, rest: readonly string[], io: CliIo): CommandLine | number {
  const specs = { ...COMMON_OPTIONS, ...command.options };
  let values: OptionValues;
  let positionals: string[];
  try {
    const parsed = parseArgs({ args: [...rest], options: toParseArgs(specs), allowPositionals: true, strict: true });
    values = parsed.values as OptionValues;
    positionals = parsed.positionals;
  } catch (error) {
    io.stderr.write(`error: ${parseErrorText(error, Object.keys(specs))}\nusage: ${commandUsage(command)} (see --help)\n`);
    return EXIT.config;
  }
  if (values.help === true) {
    io.stdout.write(commandHelp(command, COMMON_OPTIONS));
    return EXIT.ok;
  }
  const min = command.minArgs ?? 0;
  const max = command.maxArgs ?? min;
  if (positionals.length < min || positionals.length > max) {
    const expected = min === max ? `${min}` : max === Number.POSITIVE_INFINITY ? `at least ${min}` : `${min} to ${max}`;
    io.stderr.write(`error: sluice ${command.name} takes ${expected} argument(s), got ${positionals.length}\nusage: ${commandUsage(command)} (see --help)\n`);
    return EXIT.config;
  }
  const logFormat = values['log-format'];
  if (logFormat !== undefined && logFormat !== 'text' && logFormat !== 'json') {
    io.stderr.write(`error: --log-format must be text or json, got ${JSON.stringify(logFormat)}\n`);
    return EXIT.config;
  }
  return { values, positionals, logFormat };
}

/** Runs a command under a signal of its own (the caller's, or this process's SIGINT/SIGTERM); what it throws becomes an exit code. */
async function runCommand(command: Command, { values, positionals, logFormat }: CommandLine, io: CliIo, signal: AbortSignal | undefined): Promise<number> {
  const log: Logger = createLogger(io.stderr, { format: resolveLogFormat(logFormat, io.stderr), level: values.quiet === true ? 'warn' : 'info' });
  const controller = new AbortController();
  const cleanup = signal ? linkSignal(signal, controller) : trapProcessSignals(controller, log, shouldWatchParent(io.env));
  try {
    const code = await command.run({ io, values, positionals, log, signal: controller.signal });
    return controller.signal.aborted && !command.handlesSignals ? EXIT.interrupted : code;
  } catch (error) {
    const code = exitCodeOf(error, controller.signal.aborted);
    if (error instanceof UsageError) {
      io.stderr.write(`error: ${error.message}\nusage: ${commandUsage(command)} (see --help)\n`);
    } else if (code === EXIT.interrupted) {
      log.warn('interrupted', { command: command.name });
    } else {
      log.error(error instanceof Error ? error.message : String(error), { command: command.name, error: errorName(error), exit_code: code });
    }
    return code;
  } finally {
    cleanup();
  }
}

function toParseArgs(specs: Readonly<Record<string, OptionSpec>>): ParseArgsOptionsConfig {
  // parseArgs rejects keys present with an undefined value, so only set what is given.
  const out: ParseArgsOptionsConfig = {};
  for (const [name, s] of Object.entries(specs)) {
    const option: ParseArgsOptionsConfig[string] = { type: s.type };
    if (s.short !== undefined) option.short = s.short;
    if (s.multiple !== undefined) option.multiple = s.multiple;
    if (typeof s.default === 'string' && s.type === 'string') option.default = s.default;
    out[name] = option;
  }
  return out;
}

function findCommand(commands: readonly Command[], argv: readonly string[]): { command: Command; rest: readonly string[] } | undefined {
  const two = argv.length >= 2 ? commands.find((c) => c.name === `${argv[0]} ${argv[1]}`) : undefined;
  if (two) return { command: two, rest: argv.slice(2) };
  const one = commands.find((c) => c.name === argv[0]);
  return one ? { command: one, rest: argv.slice(1) } : undefined;
}

function errorName(error: unknown): string {
  if (error instanceof Error) return (error as { code?: unknown }).code !== undefined ? String((error as { code?: unknown }).code) : error.name;
  return typeof error;
}

function linkSignal(signal: AbortSignal, controller: AbortController): () => void {
  const abort = (): void => controller.abort(signal.reason);
  if (signal.aborted) abort();
  signal.addEventListener('abort', abort, { once: true });
  return () => signal.removeEventListener('abort', abort);
}

/**
 * The first SIGINT/SIGTERM aborts the command, which cancels remote executions and aborts
 * uploads before it returns 130; a second one exits at once (the user means it). With
 * `watchParentToo` (run under npm), the death of the parent process stops it as a SIGTERM does:
 * the wrapper was stopped, and did not pass the signal on (./parentWatch.ts).
 */
function trapProcessSignals(controller: AbortController, log: Logger, watchParentToo: boolean): () => void {
  let exiting = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (controller.signal.aborted) {
      if (exiting) return;
      exiting = true;
      // At once, but not under DuckDB's feet (that aborts the process) and not leaving lock files.
      void exitAfterHooks(EXIT.interrupted);
      return;
    }
    log.warn(`received ${signal}: stopping (send it again to exit at once)`, { signal });
    const error = new Error(`interrupted by ${signal}`);
    error.name = 'AbortError';
    controller.abort(error);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const unwatch = watchParentToo
    ? watchParent((parent) => {
        if (controller.signal.aborted) return;
        log.warn('the parent process is gone (npx or npm was stopped and did not pass the signal on): stopping as on SIGTERM', { parent_pid: parent });
        const error = new Error(`interrupted: parent process ${parent} is gone`);
        error.name = 'AbortError';
        controller.abort(error);
      })
    : () => undefined;
  return () => {
    unwatch();
    // A stopping command returns before the process has exited (the embedded service still
    // closes): a second signal in that window must still exit 130 through the exit hooks, not
    // take the default action and kill the process by the signal. Signal listeners do not keep
    // the process alive, so staying costs nothing.
    if (controller.signal.aborted) return;
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}

/**
 * parseArgs' message for an unknown option, in our words and with the nearest option named
 * (node's own text about positionals starting with '-' also lacks its closing quote).
 */
function parseErrorText(error: unknown, known: readonly string[]): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  const unknown = /^Unknown option '(-{1,2}[^']*)'/.exec(message)?.[1];
  if (code !== 'ERR_PARSE_ARGS_UNKNOWN_OPTION' || unknown === undefined) return message;
  const name = unknown.replace(/^-+/, '').split('=')[0]!;
  const hint = closest(name, known);
  const meant = hint === undefined ? '' : `; did you mean --${hint}?`;
  return `unknown option ${unknown}${meant} (an argument that starts with '-' goes after '--', as in: -- ${JSON.stringify(unknown)})`;
}
