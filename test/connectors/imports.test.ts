import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../cli/sluiceProcess.ts';

// Issue 5: connectors live one folder each and import only src/kit (plus npm packages), so a
// connector can be read, tested and replaced on its own.

const CONNECTORS = join(ROOT, 'connectors');
const KIT = join(ROOT, 'src/kit');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

const inside = (path: string, dir: string): boolean => path === dir || path.startsWith(`${dir}${sep}`);

describe('connectors/', () => {
  const files = sources(CONNECTORS).filter((f) => dirname(f) !== CONNECTORS); // connectors/index.ts is the list of all

  it('has the formats and sinks of the issue, one folder each', () => {
    const folders = [...new Set(files.map((f) => relative(CONNECTORS, f).split(sep).slice(0, 2).join('/')))].sort();
    expect(folders).toEqual(['formats/arrow', 'formats/csv', 'formats/ndjson', 'formats/parquet', 'sinks/azure', 'sinks/file', 'sinks/gcs', 'sinks/s3', 'sinks/stdout']);
  });

  it('each connector imports only its own folder, src/kit and packages', () => {
    const offences: string[] = [];
    for (const file of files) {
      const own = join(CONNECTORS, ...relative(CONNECTORS, file).split(sep).slice(0, 2));
      for (const [, spec] of readFileSync(file, 'utf8').matchAll(/\bfrom\s+'([^']+)'/g)) {
        if (!spec!.startsWith('.')) continue;
        const target = resolve(dirname(file), spec!);
        if (!inside(target, own) && !inside(target, KIT)) offences.push(`${relative(ROOT, file)} imports ${spec}`);
      }
    }
    expect(files.length).toBeGreaterThan(7);
    expect(offences).toEqual([]);
  });
});

// Sinks and formats are handed in by the composition roots (the package entry point and the CLI):
// the code that validates and writes outputs names no connector, so a new one touches no file of src/.
describe('src/ and connectors/', () => {
  const SRC = join(ROOT, 'src');
  const ROOTS = [join(SRC, 'index.ts'), join(SRC, 'cli')];

  it('only the composition roots mention connectors/', () => {
    const offences = sources(SRC)
      .filter((file) => !ROOTS.some((root) => inside(file, root)))
      .filter((file) => readFileSync(file, 'utf8').includes('connectors/'))
      .map((file) => relative(ROOT, file));
    expect(offences).toEqual([]);
  });

  it('the output schema knows no particular sink', () => {
    const text = readFileSync(join(SRC, 'export/outputConfig.ts'), 'utf8');
    expect(text).not.toMatch(/s3|stdout|standard output/i);
  });
});
