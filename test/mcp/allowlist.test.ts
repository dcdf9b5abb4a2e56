import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OutputAllowlist } from '../../src/mcp/allowlist.ts';

const dir = mkdtempSync(join(tmpdir(), 'sluice-allow-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('OutputAllowlist', () => {
  it('denies everything when no location is allowed, and standard output always', () => {
    const none = new OutputAllowlist([], dir);
    expect(none.check(join(dir, 'x'), dir)).toMatchObject({ allowed: false, reason: expect.stringMatching(/--allow-output/) });
    expect(new OutputAllowlist([dir], dir).check('-', dir)).toMatchObject({ allowed: false, reason: expect.stringMatching(/standard output carries the MCP protocol/) });
  });

  it('allows a directory and what lies under it, relative paths from the working directory, made absolute', () => {
    const list = new OutputAllowlist(['out'], dir);
    expect(list.check('out', dir)).toEqual({ allowed: true, path: join(dir, 'out') });
    expect(list.check('out/a/b', dir)).toEqual({ allowed: true, path: join(dir, 'out/a/b') });
    expect(list.check(`file://${join(dir, 'out', 'c')}`, dir)).toEqual({ allowed: true, path: join(dir, 'out/c') });
    expect(list.check('outside', dir).allowed).toBe(false);
    expect(list.check('out/../elsewhere', dir).allowed).toBe(false);
    expect(list.check(join(dir, 'out2'), dir).allowed).toBe(false);
  });

  it('does not let a symbolic link inside an allowed directory lead out of it', () => {
    const allowed = join(dir, 'lake');
    mkdirSync(allowed, { recursive: true });
    mkdirSync(join(dir, 'secret'), { recursive: true });
    symlinkSync(join(dir, 'secret'), join(allowed, 'link'));
    const list = new OutputAllowlist([allowed], dir);
    expect(list.check(join(allowed, 'link', 'x'), dir).allowed).toBe(false);
    expect(list.check(join(allowed, 'real', 'x'), dir).allowed).toBe(true);
  });

  it('matches object-store prefixes at a path boundary, without "." or ".." segments', () => {
    const list = new OutputAllowlist(['s3://bucket/agents/'], dir);
    expect(list.check('s3://bucket/agents', dir)).toEqual({ allowed: true, path: 's3://bucket/agents' });
    expect(list.check('s3://bucket/agents/daily/', dir)).toEqual({ allowed: true, path: 's3://bucket/agents/daily' });
    expect(list.check('s3://bucket/agents-other/x', dir).allowed).toBe(false);
    expect(list.check('s3://bucket/agents/../other', dir)).toMatchObject({ allowed: false, reason: expect.stringMatching(/segments are not allowed/) });
    expect(list.check('s3://other/agents', dir).allowed).toBe(false);
    // A local entry never admits an object-store path, nor the reverse.
    expect(new OutputAllowlist([dir], dir).check('s3://bucket/x', dir).allowed).toBe(false);
    expect(list.check(join(dir, 'x'), dir).allowed).toBe(false);
  });
});
