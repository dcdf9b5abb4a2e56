import { existsSync, readdirSync, readlinkSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

// What a local output keeps beside it, in its private area `.<name>.sluice/`: commit folders under
// `v/`, the resume journals of runs in progress, leases.

function areaOf(target: string): string {
  return join(dirname(target), `.${basename(target)}.sluice`);
}

/** The parts the resume journal of a run in progress lists (none when there is no journal yet). */
export async function localJournal<P = { path: string; first_row: number }>(target: string): Promise<P[]> {
  const area = areaOf(target);
  for (const name of await readdir(area).catch(() => [] as string[])) {
    if (!name.startsWith('.sluice-journal-')) continue;
    const text = await readFile(join(area, name), 'utf8').catch(() => undefined);
    if (text !== undefined) return (JSON.parse(text) as { parts: P[] }).parts;
  }
  return [];
}

/**
 * Commit folders in the area of a run in progress or left behind by a killed one: not the one the
 * output links to, nor a complete commit (the output the last commit replaced, kept for readers).
 */
export function otherCommits(target: string): string[] {
  const folders = join(areaOf(target), 'v');
  if (!existsSync(folders)) return [];
  const current = existsSync(target) ? basename(readlinkSync(target)) : undefined;
  return readdirSync(folders).filter((n) => n !== current && !existsSync(join(folders, n, '_manifest.json')));
}

/** Whether a run in progress has finished a part of `extension` in its commit folder. */
export function hasStagedPart(target: string, extension: string): boolean {
  const folders = join(areaOf(target), 'v');
  return otherCommits(target).some((f) => readdirSync(join(folders, f)).some((n) => n.endsWith(extension)));
}

/** Resume journals left in the area. */
export function journalsLeft(target: string): string[] {
  const area = areaOf(target);
  return existsSync(area) ? readdirSync(area).filter((n) => n.startsWith('.sluice-journal-')) : [];
}
