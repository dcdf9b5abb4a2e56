// The toolchains the official Python and Go clients need, found or installed by the tests
// themselves (CI runs `npm ci && npm test` on a clean machine): Debian's python3 with the Python
// client's dependencies (apt-get install, when running as root with apt), and a Go toolchain of
// at least 1.22 (the system's, else Debian bookworm-backports' golang-1.23-go, downloaded with
// apt-get download and unpacked into a cache directory: nothing installed system-wide). When one
// cannot be had, the reason is returned and the test lists its cases as not run with it.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type Toolchain = { ok: true; bin: string; env?: Record<string, string> } | { ok: false; reason: string };

const PYTHON_MODULES = ['requests', 'aiohttp', 'dateutil', 'dataclasses_json', 'deprecated', 'certifi'];
const PYTHON_PACKAGES = ['python3-requests', 'python3-aiohttp', 'python3-dateutil', 'python3-dataclasses-json', 'python3-deprecated', 'python3-certifi'];
const CACHE = join(tmpdir(), 'sluice-official-clients');

const run = (cmd: string, args: string[], timeout = 600_000, env?: NodeJS.ProcessEnv) => spawnSync(cmd, args, { encoding: 'utf8', timeout, env: env ?? process.env });
const isRoot = (): boolean => process.getuid?.() === 0;
const has = (cmd: string): boolean => run('sh', ['-c', `command -v ${cmd}`]).status === 0;

let aptUpdated = false;
function aptInstall(packages: string[]): string | undefined {
  if (!isRoot() || !has('apt-get')) return `not root with apt-get (${isRoot() ? 'no apt-get' : 'not root'}): install ${packages.join(' ')}`;
  if (!aptUpdated) {
    const u = run('apt-get', ['update', '-qq']);
    if (u.status !== 0) return `apt-get update failed: ${(u.stderr || u.stdout).trim().slice(-300)}`;
    aptUpdated = true;
  }
  const r = run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...packages], 900_000, { ...process.env, DEBIAN_FRONTEND: 'noninteractive' });
  return r.status === 0 ? undefined : `apt-get install ${packages.join(' ')} failed: ${(r.stderr || r.stdout).trim().slice(-300)}`;
}

/** Debian's /usr/bin/python3 (where python3-* packages install) with the client's dependencies. */
export function pythonToolchain(): Toolchain {
  const bin = '/usr/bin/python3';
  if (!existsSync(bin)) return { ok: false, reason: 'no /usr/bin/python3 (Debian python3) on this machine' };
  const probe = () => run(bin, ['-c', `import ${PYTHON_MODULES.join(', ')}`]);
  if (probe().status !== 0) {
    const failed = aptInstall(PYTHON_PACKAGES);
    if (failed !== undefined) return { ok: false, reason: `the Python client's dependencies are missing (${probe().stderr.trim().split('\n').at(-1)}); ${failed}` };
    if (probe().status !== 0) return { ok: false, reason: `installed ${PYTHON_PACKAGES.join(' ')} but python3 still cannot import them: ${probe().stderr.trim().slice(-200)}` };
  }
  return { ok: true, bin };
}

function goVersion(bin: string): [number, number] | undefined {
  const r = run(bin, ['version']);
  const m = /go(\d+)\.(\d+)/.exec(r.stdout ?? '');
  return m === null ? undefined : [Number(m[1]), Number(m[2])];
}

const goodGo = (bin: string): boolean => {
  const v = goVersion(bin);
  return v !== undefined && (v[0] > 1 || v[1] >= 22);
};

/** A Go of at least 1.22: on the PATH, or Debian bookworm-backports' golang-1.23-go unpacked into the cache. */
export function goToolchain(): Toolchain {
  for (const bin of ['go', '/usr/lib/go-1.23/bin/go', '/usr/lib/go-1.22/bin/go']) if ((bin === 'go' ? has('go') : existsSync(bin)) && goodGo(bin)) return { ok: true, bin };
  const root = join(CACHE, 'go-1.23');
  const bin = join(root, 'usr', 'lib', 'go-1.23', 'bin', 'go');
  if (existsSync(bin) && goodGo(bin)) return { ok: true, bin, env: { GOROOT: join(root, 'usr', 'lib', 'go-1.23') } };
  if (!has('apt-get') || !has('dpkg-deb')) return { ok: false, reason: 'no Go >= 1.22 on the PATH and no apt-get/dpkg-deb to fetch Debian golang-1.23-go' };
  // A private apt state: bookworm-backports is read for this download only, the system's sources are untouched.
  const apt = join(CACHE, 'apt');
  mkdirSync(join(apt, 'lists', 'partial'), { recursive: true });
  mkdirSync(join(apt, 'archives', 'partial'), { recursive: true });
  writeFileSync(join(apt, 'sources.list'), 'deb http://deb.debian.org/debian bookworm-backports main\n');
  const opts = ['-o', `Dir::Etc::SourceList=${join(apt, 'sources.list')}`, '-o', 'Dir::Etc::SourceParts=/dev/null', '-o', `Dir::State::Lists=${join(apt, 'lists')}`, '-o', `Dir::Cache=${join(apt, 'cache')}`, '-o', 'APT::Sandbox::User=root'];
  const u = run('apt-get', [...opts, 'update', '-qq']);
  if (u.status !== 0) return { ok: false, reason: `apt-get update of bookworm-backports failed: ${(u.stderr || u.stdout).trim().slice(-300)}` };
  const debs = join(CACHE, 'debs');
  mkdirSync(debs, { recursive: true });
  const d = spawnSync('apt-get', [...opts, 'download', 'golang-1.23-go', 'golang-1.23-src'], { cwd: debs, encoding: 'utf8', timeout: 900_000 });
  if (d.status !== 0) return { ok: false, reason: `apt-get download golang-1.23-go golang-1.23-src failed: ${(d.stderr || d.stdout).trim().slice(-300)}` };
  for (const deb of readdirSync(debs).filter((f) => f.endsWith('.deb'))) {
    const x = run('dpkg-deb', ['-x', join(debs, deb), root]);
    if (x.status !== 0) return { ok: false, reason: `dpkg-deb -x ${deb} failed: ${x.stderr.trim()}` };
  }
  if (!existsSync(bin) || !goodGo(bin)) return { ok: false, reason: `unpacked golang-1.23-go but ${bin} does not run` };
  return { ok: true, bin, env: { GOROOT: join(root, 'usr', 'lib', 'go-1.23') } };
}
