import { readFileSync } from 'node:fs';
import { serveCommand } from './commands/serve.ts';

/** One entry per command; `run` gets the arguments after the command name and returns the exit code. */
export interface Command {
  name: string;
  summary: string;
  usage: string;
  run(argv: string[]): Promise<number>;
}

export const COMMANDS: Command[] = [serveCommand];

function version(): string {
  const pkg: unknown = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  return typeof pkg === 'object' && pkg !== null && 'version' in pkg && typeof pkg.version === 'string' ? pkg.version : 'unknown';
}

function help(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'sluice: stream analytics query results into data lakes',
    '',
    'usage: sluice <command> [options]',
    '',
    'commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'sluice <command> --help shows the options of a command; sluice --version the version.',
  ].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    process.stdout.write(`${help()}\n`);
    return first === undefined ? 2 : 0;
  }
  if (first === '--version' || first === '-v') {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === first);
  if (command === undefined) {
    process.stderr.write(`sluice: unknown command "${first}"\n\n${help()}\n`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(`${command.usage}\n`);
    return 0;
  }
  return command.run(rest);
}
