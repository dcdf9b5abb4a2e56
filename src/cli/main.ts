import { runCli } from './commands/index.ts';

/** The program behind `bin/sluice.js`: the command table lives in ./commands/index.ts. */
export function main(argv: string[]): Promise<number> {
  return runCli(argv);
}
