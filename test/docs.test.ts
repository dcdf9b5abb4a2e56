import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './cli/sluiceProcess.ts';

// Comments cite the wire protocol, the service interface and the type rules by file and section
// (`protocol.md section 4`, `service-interface.md 2.1`): those pages live in docs/, and every
// section cited is there.

const CITATION = /\b(protocol|types|service-interface)\.md(?:,? (?:section )?(\d+(?:\.\d+)?))?/g;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? (e.name === 'node_modules' ? [] : sources(join(dir, e.name))) : /\.(ts|md)$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

describe('docs/', () => {
  it('holds every page and section the code cites', () => {
    const missing: string[] = [];
    let cited = 0;
    for (const file of [...sources(join(ROOT, 'src')), ...sources(join(ROOT, 'connectors')), ...sources(join(ROOT, 'test'))]) {
      for (const [, page, section] of readFileSync(file, 'utf8').matchAll(CITATION)) {
        cited++;
        let doc: string;
        try {
          doc = readFileSync(join(ROOT, 'docs', `${page}.md`), 'utf8');
        } catch {
          missing.push(`${relative(ROOT, file)}: docs/${page}.md`);
          continue;
        }
        if (section !== undefined && !new RegExp(`^#{2,3} ${section.replace('.', '\\.')}[. ]`, 'm').test(doc)) missing.push(`${relative(ROOT, file)}: docs/${page}.md section ${section}`);
      }
    }
    expect(cited).toBeGreaterThan(40);
    expect(missing).toEqual([]);
  });

  it('links only to pages and sections that exist (the README and every page of docs/)', () => {
    const pages = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    const broken: string[] = [];
    for (const page of pages) {
      const text = readFileSync(join(ROOT, page), 'utf8');
      for (const [, target, section] of text.matchAll(/\]\(([^)#\s]*)(?:#([^)\s]+))?\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue; // https:, mailto:
        const file = target === '' ? page : join(dirname(page), target!);
        let linked: string;
        try {
          linked = readFileSync(join(ROOT, file), 'utf8');
        } catch {
          broken.push(`${page}: ${target}`);
          continue;
        }
        if (section !== undefined && !anchors(linked).has(section)) broken.push(`${page}: ${target}#${section}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('holds every docs/ page the code names', () => {
    const named = new Set<string>();
    for (const file of [...sources(join(ROOT, 'src')), ...sources(join(ROOT, 'connectors')), ...sources(join(ROOT, 'bench'))]) {
      for (const [, page] of readFileSync(file, 'utf8').matchAll(/\bdocs\/([\w-]+\.md)\b/g)) named.add(page!);
    }
    expect(named.size).toBeGreaterThan(3);
    expect([...named].filter((page) => !existsSync(join(ROOT, 'docs', page)))).toEqual([]);
  });
});

/** The anchors of a Markdown page: its headings as GitHub makes them, and explicit `<a id>`s. */
function anchors(text: string): Set<string> {
  const out = new Set<string>();
  for (const [, heading] of text.matchAll(/^#{1,6} (.+)$/gm)) out.add(heading!.toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-'));
  for (const [, id] of text.matchAll(/<a id="([^"]+)"><\/a>/g)) out.add(id!);
  return out;
}
