// A copy of the checkout's package files in a temp folder, with the checkout's node_modules linked
// in: what a fresh clone holds after `npm ci`, for the tests that build or pack. They work there, so
// the test suite never writes dist/ into the checkout (which would hide a checkout that cannot be
// imported before a build).
import { cp, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../cli/sluiceProcess.ts';

/** What `files`, the build and the scripts of package.json need: the sources, not the tests. */
const PACKAGE_FILES = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'README.md', 'docs', 'bin', 'src', 'connectors', 'config'];

export interface CheckoutCopy {
  readonly dir: string;
  remove(): Promise<void>;
}

export async function checkoutCopy(): Promise<CheckoutCopy> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-checkout-'));
  for (const name of PACKAGE_FILES) await cp(join(ROOT, name), join(dir, name), { recursive: true });
  await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
