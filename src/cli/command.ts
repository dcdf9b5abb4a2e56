import type { CliIo } from './io.ts';
import type { Logger } from './log.ts';

/** One option of a command, in node:util parseArgs terms plus what `--help` prints. */
export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  readonly multiple?: boolean;
  readonly description: string;
  /** Shown in help as `--out FILE`. */
  readonly valueName?: string;
  readonly default?: string | boolean;
}

export type OptionValues = Record<string, string | boolean | string[] | undefined>;

export interface CommandContext {
  readonly io: CliIo;
  readonly values: OptionValues;
  readonly positionals: readonly string[];
  readonly log: Logger;
  /** Aborted on SIGINT/SIGTERM: commands stop, cancel remote work, clean up, and return. */
  readonly signal: AbortSignal;
}

export interface Command {
  /** One or two words: `run`, `views list`. */
  readonly name: string;
  readonly summary: string;
  /** Positional arguments as shown in usage: `FILE`, `"<sql>"`, `[NAME]`. */
  readonly args?: string;
  readonly minArgs?: number;
  readonly maxArgs?: number;
  readonly options?: Readonly<Record<string, OptionSpec>>;
  /** Extra paragraphs for `--help` (examples). */
  readonly details?: string;
  /**
   * The command treats SIGINT/SIGTERM as its normal way to end (`schedule`) and chooses its own
   * exit code then; otherwise an interrupted command exits 130.
   */
  readonly handlesSignals?: boolean;
  /** Hands the raw arguments to a command that parses its own (`serve`). */
  readonly passthrough?: (argv: string[]) => Promise<number>;
  run(ctx: CommandContext): Promise<number>;
}

export function defineCommand(command: Command): Command {
  return Object.freeze(command);
}

/** Typed accessors: parseArgs gives string | boolean | string[] | undefined. */
export function stringOption(values: OptionValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

export function flag(values: OptionValues, name: string): boolean {
  return values[name] === true;
}

export function listOption(values: OptionValues, name: string): string[] {
  const value = values[name];
  if (Array.isArray(value)) return value;
  return typeof value === 'string' ? [value] : [];
}
