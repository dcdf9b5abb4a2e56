import { VIEW_FULL_NAME, VIEW_SHORT_NAME } from '../../protocol/index.ts';
import { ViewError } from './errors.ts';

export interface ViewName {
  team: string;
  /** `result_<x>`: the table's name in the team's schema. */
  name: string;
  /** `service.<team>.result_<x>`. */
  fullName: string;
}

/** Longer names are refused: they end up as SQL identifiers and file names. */
const MAX_NAME = 100;

export function fullViewName(team: string, name: string): string {
  return `service.${team}.${name}`;
}

/**
 * Reads a view name as a client gives it: the full `service.<team>.result_<x>`, or the short
 * `result_<x>`, which means the caller's team. Anything else is 400 with the rule.
 */
export function parseViewName(given: string, callerTeam: string): ViewName {
  const full = VIEW_FULL_NAME.exec(given);
  const team = full?.[1] ?? callerTeam;
  const name = full?.[2] ?? (VIEW_SHORT_NAME.test(given) ? given : undefined);
  if (name === undefined || name.length > MAX_NAME) {
    throw new ViewError(
      400,
      `Bad Request: invalid materialized view name "${given}": the full name is service.<team>.result_<x>, where result_<x> starts with "result_", holds only a-z, 0-9 and _, and has at most ${MAX_NAME} characters (e.g. result_daily_totals)`,
    );
  }
  return { team, name, fullName: fullViewName(team, name) };
}
