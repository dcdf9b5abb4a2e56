import { readFileSync } from 'node:fs';

/**
 * This process's own peak resident set, bytes, threads included. `process.resourceUsage().maxRSS`
 * is not that in a child process on Linux: the kernel carries the parent's high-water mark across
 * fork and exec, so a child of a 400 MB bench reports at least 400 MB, whatever it used. `VmHWM`
 * belongs to the process's own memory map, made by its exec; elsewhere `maxRSS` is what there is.
 */
export function peakRss(): number {
  try {
    const hwm = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (hwm !== null) return Number(hwm[1]) * 1024;
  } catch {
    // No /proc: not Linux.
  }
  return process.resourceUsage().maxRSS * 1024;
}
