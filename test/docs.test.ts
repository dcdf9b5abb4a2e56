import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
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
});
