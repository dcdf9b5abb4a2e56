import { Cron } from 'croner';

/**
 * Checks a cron expression (five fields, or six with seconds, or `@hourly`-style nicknames) and
 * returns why it is invalid, or undefined. `timezone` is an IANA name; the default is UTC so a
 * schedule means the same thing on every machine.
 */
export function cronProblem(expression: string, timezone = 'UTC'): string | undefined {
  try {
    const cron = new Cron(expression, { paused: true, timezone });
    cron.stop();
    return undefined;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return `invalid cron expression "${expression}": ${message.replace(/^CronPattern: /, '')} (five fields: minute hour day-of-month month day-of-week, e.g. "*/15 * * * *")`;
  }
}

export function timezoneProblem(timezone: string): string | undefined {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return undefined;
  } catch {
    return `unknown time zone "${timezone}" (an IANA name such as UTC or Europe/Berlin)`;
  }
}
