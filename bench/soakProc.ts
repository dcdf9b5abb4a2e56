// What the soak (bench/soak.ts) reads of a process it watches, from /proc (Linux): its RSS, its
// open descriptors by kind, and its RSS split by the kind of mapping that holds it, so that a
// climb can be put on the part that climbs (V8's heap pages, glibc's arenas, files mapped).
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

export function rssOf(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024;
}

/** Open descriptors by what they point at: socket, pipe, anon_inode (epoll, eventfd, ...), a file under `dataDir`, another file. */
export function descriptorsOf(pid: number, dataDir: string): Record<string, number> {
  const kinds: Record<string, number> = {};
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue; // closed meanwhile
    }
    const kind = descriptorKind(target, dataDir);
    kinds[kind] = (kinds[kind] ?? 0) + 1;
  }
  return kinds;
}

export function descriptorKind(target: string, dataDir: string): string {
  const special = /^(socket|pipe|anon_inode):/.exec(target);
  if (special) return target.startsWith('anon_inode:') ? target.replace(/^anon_inode:\[?([^\]]*)\]?$/, 'anon_inode:$1') : special[1]!;
  if (target.startsWith(`${dataDir}/`)) return `data folder: ${target.slice(dataDir.length + 1).split('/')[0]}`;
  return 'other file';
}

/** glibc maps each thread arena's heap at an address aligned to its largest size, 64 MiB on 64-bit. */
const GLIBC_HEAP = 64 * 1024 * 1024;

export interface RssSplit {
  /** Anonymous mappings under 1 MiB: V8 maps its heap a 256 KiB page at a time. */
  v8Pages: number;
  /** glibc's thread arenas (anonymous, at a 64 MiB-aligned address) and its main arena (`[heap]`). */
  arenas: number;
  /** Mapped files: the code of Node and DuckDB. */
  files: number;
  /** The rest: thread stacks, V8's large objects and code, DuckDB's own buffers. */
  otherAnon: number;
}

/** The process's resident memory by the kind of mapping holding it (bytes), from /proc/PID/smaps. */
export function rssSplitOf(pid: number): RssSplit {
  return rssSplit(readFileSync(`/proc/${pid}/smaps`, 'utf8'));
}

export function rssSplit(smaps: string): RssSplit {
  const split: RssSplit = { v8Pages: 0, arenas: 0, files: 0, otherAnon: 0 };
  for (const block of smaps.split(/\n(?=[0-9a-f]+-[0-9a-f]+ )/)) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+[ \t]*(.*)$/m.exec(block);
    if (!head) continue;
    const start = parseInt(head[1]!, 16);
    const size = parseInt(head[2]!, 16) - start;
    const name = head[3]!.trim();
    const rss = Number(/^Rss:\s+(\d+) kB/m.exec(block)?.[1] ?? 0) * 1024;
    if (name === '[heap]' || (name === '' && start % GLIBC_HEAP === 0 && size <= GLIBC_HEAP)) split.arenas += rss;
    else if (name.startsWith('/')) split.files += rss;
    else if (name === '' && size < 1024 * 1024) split.v8Pages += rss;
    else split.otherAnon += rss; // [stack], [vdso], larger anonymous mappings
  }
  return split;
}
