// One service per data folder. DuckDB lets one process open the folder's databases; the process
// that did (the owner: `sluice serve`, or a command that started the embedded service) writes
// owner.json into the folder: its pid, its loopback URL and, when the service runs with the default
// settings, the Admin key of team demo. Another process that needs the folder's service reads it
// and talks to the owner over loopback instead of failing on DuckDB's lock.
//
// The file is the owner's only while it lives: mode 0600 (it holds a key: readable by the user
// who could open the databases themselves, nobody else), written whole (temp + rename), removed by
// the owner as it starts to close. A record whose process is gone (killed -9) or that does not
// answer is stale: the next process removes it, opens the folder itself and becomes the owner.
//
// A borrower sends the owner its API key and SQL and prints what comes back, so it trusts a record
// only when nobody but this user could have written it (a file of this user, mode 0600), its URL
// is loopback, and whatever answers there proves it holds the record's token: the borrower sends a
// fresh random challenge, and the owner answers HMAC-SHA256(token, challenge) in a header. A
// process that merely listens on the port (the owner died and another took the port) cannot.
// Anything less is treated as stale.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { rmSync } from 'node:fs';
import { lstat, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { onExitRemove } from '../exitHooks.ts';
import { writeJsonAtomically } from '../kit/atomicFile.ts';
import { processRuns } from '../kit/processRuns.ts';

export const OWNER_FILE = 'owner.json';
/** How long a probe of the owner's URL may take before the owner is taken for stale. */
const PROBE_TIMEOUT_MS = 3_000;
/** The borrower's challenge (hex), sent with the probe; the owner answers in OWNER_PROOF_HEADER. */
export const OWNER_CHALLENGE_HEADER = 'x-sluice-owner-challenge';
export const OWNER_PROOF_HEADER = 'x-sluice-owner-proof';
const CHALLENGE = /^[0-9a-f]{32,128}$/;
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

const OwnerSchema = z.strictObject({
  pid: z.number().int().positive(),
  /** Base URL including the API prefix, on a loopback address. */
  url: z.string().url(),
  /** The Admin key of team demo when the owner runs the default settings. */
  key: z.string().optional(),
  started_at: z.string(),
  /** Rows of sample.events asked of this service when it started (absent: it kept the table it found). */
  sample_rows: z.number().int().nonnegative().optional(),
  /** Changes with every owner: removing the record checks it is still this owner's. */
  token: z.string(),
});
export type OwnerRecord = z.infer<typeof OwnerSchema>;

/** The loopback base URL a service bound to `host` is reached on from this machine, or undefined when it is not bound to loopback. */
export function loopbackUrl(host: string, port: number, prefix: string): string | undefined {
  if (host === '127.0.0.1' || host === 'localhost' || host === '0.0.0.0') return `http://127.0.0.1:${port}${prefix}`;
  if (host === '::1' || host === '::') return `http://[::1]:${port}${prefix}`;
  return undefined;
}

/** A fresh token for an owner record: it must hold it to answer challenges (ownerProof). */
export function newOwnerToken(): string {
  return randomBytes(16).toString('hex');
}

/** The owner's answer to a challenge, or undefined when the challenge is not one (hex, 32-128 digits). */
export function ownerProof(token: string, challenge: string | string[] | undefined): string | undefined {
  if (typeof challenge !== 'string' || !CHALLENGE.test(challenge)) return undefined;
  return createHmac('sha256', token).update(challenge).digest('hex');
}

/** Writes this process's record with `token`; returns its removal (a no-op once another owner replaced it). */
export async function advertiseOwner(dataDir: string, record: Omit<OwnerRecord, 'pid' | 'started_at' | 'token'>, token: string): Promise<() => Promise<void>> {
  const file = join(dataDir, OWNER_FILE);
  const full: OwnerRecord = { pid: process.pid, started_at: new Date().toISOString(), token, ...record };
  await writeJsonAtomically(file, full, { mode: 0o600 });
  return async () => {
    const current = await readOwnerFile(dataDir);
    if (current?.token === token) await rm(file, { force: true });
  };
}

async function readOwnerFile(dataDir: string): Promise<OwnerRecord | undefined> {
  let text: string;
  try {
    text = await readFile(join(dataDir, OWNER_FILE), 'utf8');
  } catch {
    return undefined;
  }
  try {
    const parsed = OwnerSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Why a record cannot be trusted before it is even probed (undefined: it may be). */
async function untrusted(dataDir: string, record: OwnerRecord): Promise<string | undefined> {
  const st = await lstat(join(dataDir, OWNER_FILE)).catch(() => undefined);
  if (st === undefined || !st.isFile()) return 'not a file';
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) return `owned by uid ${st.uid}, not ${uid}`;
  if (process.platform !== 'win32' && (st.mode & 0o777) !== 0o600) return `mode ${(st.mode & 0o777).toString(8)}, not 600`;
  let url: URL;
  try {
    url = new URL(record.url);
  } catch {
    return 'URL does not parse';
  }
  if (url.protocol !== 'http:' || !LOOPBACK_HOSTS.has(url.hostname)) return `URL ${url.origin} is not loopback`;
  return undefined;
}

/**
 * The running owner of the folder's service, or undefined (none, or a stale record, which is then
 * removed). Trusted only when the file is this user's, mode 0600, its URL loopback, and the service
 * there answers a fresh challenge with the record's token (see the header); any HTTP status will
 * do (a 401 included) as long as the proof is right.
 */
export async function findOwner(dataDir: string): Promise<OwnerRecord | undefined> {
  const record = await readOwnerFile(dataDir);
  if (record === undefined) return undefined;
  const trusted = record.pid !== process.pid && (await untrusted(dataDir, record)) === undefined && processRuns(record.pid) && (await provesToken(record));
  if (trusted) return record;
  // Gone, not answering, or not provably the owner: stale. Removed only if it is still that record.
  const again = await readOwnerFile(dataDir);
  if (again?.token === record.token) await rm(join(dataDir, OWNER_FILE), { force: true });
  return undefined;
}

async function provesToken(record: OwnerRecord): Promise<boolean> {
  const challenge = randomBytes(32).toString('hex');
  const expected = Buffer.from(ownerProof(record.token, challenge)!, 'hex');
  try {
    const res = await fetch(`${record.url}/v1/usage`, {
      headers: { [OWNER_CHALLENGE_HEADER]: challenge, ...(record.key === undefined ? {} : { 'x-service-api-key': record.key }) },
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
      redirect: 'manual',
    });
    await res.body?.cancel();
    const given = Buffer.from(res.headers.get(OWNER_PROOF_HEADER) ?? '', 'hex');
    return res.status < 500 && given.length === expected.length && timingSafeEqual(given, expected);
  } catch {
    return false;
  }
}

/** DuckDB's error when another process holds the folder's database open. */
export function isLockConflict(error: unknown): boolean {
  return error instanceof Error && /Could not set lock on file|Conflicting lock/.test(error.message);
}

const BORROWERS_DIR = 'borrowers';
/** How often a closing owner looks whether the processes using its service are done. */
const BORROWERS_POLL_MS = 200;

/**
 * Marks this process as using the folder's service (a file named by its pid, removed by the
 * returned function, and on a stop at once). Taken BEFORE the owner record is read: an owner that
 * withdrew its record and then finds no borrower knows that none can still come.
 */
export async function takeLease(dataDir: string): Promise<() => Promise<void>> {
  const dir = join(dataDir, BORROWERS_DIR);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, `${process.pid}-${randomBytes(6).toString('hex')}`);
  await writeFile(file, '', { mode: 0o600 });
  const unregister = onExitRemove(() => rmSync(file, { force: true }));
  return async () => {
    unregister();
    await rm(file, { force: true });
  };
}

/**
 * Waits until no live process holds a lease on the folder's service (leases of dead processes
 * are removed), or `signal` aborts. The owner's own work is over then; theirs may not be.
 */
export async function waitForBorrowers(dataDir: string, signal: AbortSignal): Promise<void> {
  const dir = join(dataDir, BORROWERS_DIR);
  while (!signal.aborted) {
    let live = 0;
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      const pid = Number(name.split('-')[0]);
      if (Number.isInteger(pid) && pid > 0 && processRuns(pid)) live += 1;
      else await rm(join(dir, name), { force: true });
    }
    if (live === 0) return;
    await new Promise((resolve) => setTimeout(resolve, BORROWERS_POLL_MS));
  }
}
