import type { Command, OptionSpec } from './command.ts';
import { EXIT_CODE_DOCS } from './exitCodes.ts';

export function commandUsage(command: Command): string {
  const hasOptions = Object.keys(command.options ?? {}).length > 0;
  return `sluice ${command.name}${command.args ? ` ${command.args}` : ''}${hasOptions ? ' [options]' : ''}`;
}

export function commandHelp(command: Command, common: Readonly<Record<string, OptionSpec>>): string {
  const lines = [`Usage: ${commandUsage(command)}`, '', command.summary];
  if (command.details) lines.push('', command.details.trimEnd());
  const own = Object.entries(command.options ?? {});
  if (own.length > 0) lines.push('', 'Options:', ...optionLines(own));
  if (Object.keys(common).length > 0) lines.push('', 'Common options:', ...optionLines(Object.entries(common)));
  return `${lines.join('\n')}\n`;
}

function optionLines(entries: [string, OptionSpec][]): string[] {
  const left = entries.map(([name, spec]) => {
    const short = spec.short ? `-${spec.short}, ` : '    ';
    const value = spec.type === 'string' ? ` ${spec.valueName ?? 'VALUE'}` : '';
    return `  ${short}--${name}${value}`;
  });
  const width = Math.max(...left.map((l) => l.length)) + 2;
  return entries.map(([, spec], i) => {
    const dflt = spec.default !== undefined && spec.default !== false ? ` (default: ${String(spec.default)})` : '';
    return `${left[i]!.padEnd(width)}${spec.description}${dflt}`;
  });
}

export function mainHelp(commands: readonly Command[], version: string): string {
  const width = Math.max(...commands.map((c) => c.name.length)) + 2;
  const lines = [
    `sluice ${version}: stream analytics query results into files and object stores`,
    '',
    'Usage: sluice <command> [options]',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}${c.summary}`),
    '',
    'Run `sluice <command> --help` for the options of a command.',
    '',
    'Exit codes:',
    ...EXIT_CODE_DOCS.map((d) => `  ${String(d.code).padStart(3)}  ${d.meaning}`),
  ];
  return `${lines.join('\n')}\n`;
}
