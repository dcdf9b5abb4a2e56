import { SluiceError } from '../errors.ts';

/** Defaults when the server is started without budgets: ten medium executions a session, one large a call. */
export const DEFAULT_SESSION_CREDITS = 100;
export const DEFAULT_CALL_CREDITS = 20;

export interface BudgetView {
  readonly call_limit: number;
  readonly session_limit: number;
  readonly session_spent: number;
  /** Credits reserved by calls still running. */
  readonly session_reserved: number;
  readonly session_left: number;
}

/**
 * A call refused by the server's guard rails (budget, allowlist, read-only): nothing was executed
 * or written. `details` is what the agent needs to decide what to do next (the plan, the budget).
 */
export class ToolRefusedError extends SluiceError {
  readonly code: string;
  readonly details: Record<string, unknown>;

  constructor(code: string, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.code = code;
    this.details = details;
  }
}

/**
 * The credits of one server session (a stdio process, an HTTP session). A call reserves the most it
 * could spend before anything is executed, and settles to what the service charged when it ends,
 * so calls running side by side cannot together pass the session's budget.
 */
export class SessionBudget {
  readonly callLimit: number;
  readonly sessionLimit: number;
  #spent = 0;
  #reserved = 0;

  constructor(limits: { call: number; session: number }) {
    this.callLimit = limits.call;
    this.sessionLimit = limits.session;
  }

  view(): BudgetView {
    return {
      call_limit: this.callLimit,
      session_limit: this.sessionLimit,
      session_spent: this.#spent,
      session_reserved: this.#reserved,
      session_left: Math.max(0, this.sessionLimit - this.#spent - this.#reserved),
    };
  }

  /** Why `credits` cannot be spent now (undefined: they can). */
  problem(credits: number): string | undefined {
    if (credits > this.callLimit) return `this call could cost ${credits} credits, over the per-call budget of ${this.callLimit}`;
    const left = this.sessionLimit - this.#spent - this.#reserved;
    if (credits > left) return `this call could cost ${credits} credits and the session has ${Math.max(0, left)} left of its budget of ${this.sessionLimit}`;
    return undefined;
  }

  /**
   * Reserves `credits` or throws a refusal carrying `plan`; the returned function settles the
   * reservation to the credits actually charged (call it exactly once, however the call ends).
   */
  reserve(credits: number, plan: Record<string, unknown>): (charged: number) => void {
    const problem = this.problem(credits);
    if (problem !== undefined) {
      throw new ToolRefusedError('BUDGET_EXCEEDED', `refused: ${problem}; nothing was executed`, { plan, budget: this.view() });
    }
    this.#reserved += credits;
    let settled = false;
    return (charged) => {
      if (settled) return;
      settled = true;
      this.#reserved -= credits;
      this.#spent += charged;
    };
  }
}
