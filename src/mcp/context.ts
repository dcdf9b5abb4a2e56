import type { ServiceClient } from '../client/service-client.ts';
import type { Job } from '../config/jobSchema.ts';
import type { Registry } from '../kit/index.ts';
import type { OutputAllowlist } from './allowlist.ts';
import type { SessionBudget } from './budget.ts';
import type { Secrets } from './secrets.ts';

/** Rows a preview returns at most, whatever it asks for: a preview is for looking, an export for data. */
export const MAX_PREVIEW_ROWS = 100;
export const DEFAULT_PREVIEW_ROWS = 10;

export interface McpLog {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** The guard rails, set by whoever starts the server; an agent cannot change them. */
export interface McpSettings {
  /** No tool writes an output (export and run_job are not offered). */
  readonly readOnly: boolean;
  readonly allowlist: OutputAllowlist;
  readonly credits: { readonly call: number; readonly session: number };
}

/** What every session of one server shares: the connection, the job file, the settings. */
export interface McpServerContext {
  readonly client: ServiceClient;
  /** The embedded local service (no key, no cost): said in the tool results, so an agent knows it rehearses. */
  readonly embedded: boolean;
  readonly registry: Registry;
  /** The jobs of the job file the server was started with (none without one). */
  readonly jobs: readonly Job[];
  /** The run history and run state live here (the job file's state_dir). */
  readonly stateDir: string;
  readonly cwd: string;
  readonly settings: McpSettings;
  readonly log: McpLog;
  readonly secrets: Secrets;
  /** Aborted when the server stops: calls in flight stop and cancel what they started. */
  readonly signal: AbortSignal;
  /** Runs `fn` after the exports before it: exports share one job name, whose lock admits one run at a time. */
  serialExport<T>(fn: () => Promise<T>): Promise<T>;
}

/** An SQL execution this session ran, for `max_age_hours` reuse. */
export interface RecentExecution {
  readonly executionId: string;
  readonly endedAt: number;
}

/** One client's session: its own budget, its own memory of what it ran. */
export interface McpSession {
  readonly budget: SessionBudget;
  readonly recentSql: Map<string, RecentExecution>;
}

/** What a call tells the server wrapper for the run history (the run's own record when runJob wrote one). */
export interface CallFacts {
  executionId?: string;
  rows?: number;
  files?: number;
  bytes?: number;
  credits: number;
  /** runJob recorded this call in the run history already. */
  recordedByRun?: boolean;
  /** The service answered the submission with an error: no execution was created. */
  submitRefused?: boolean;
}

export interface ToolCall {
  readonly server: McpServerContext;
  readonly session: McpSession;
  /** The client's cancellation and the server's stop, together. */
  readonly signal: AbortSignal;
  readonly facts: CallFacts;
  /**
   * Tells the client how far a long call has got (MCP progress notifications, when the client asked
   * for them with a progress token; otherwise nothing). Clients that reset their request timeout on
   * progress then wait for an export of any length.
   */
  progress(done: number, total: number | undefined, message: string): void;
}
