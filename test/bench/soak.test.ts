// The soak bench's own logic (bench/soak*.ts): the slope and its error, the verdict, the thirds and
// the warm-up, the level a retention holds at a pace, and the reading of /proc it samples.
import { describe, expect, it } from 'vitest';
import { descriptorKind, rssSplit } from '../../bench/soakProc.ts';
import { fit, heldAtPace, median, ratesOfThirds, thirds, verdict, warmupCovers } from '../../bench/soakStats.ts';

describe('the soak\'s arithmetic', () => {
  it('fits the slope per hour and its standard error', () => {
    // A straight line: its slope, no error.
    expect(fit([0, 1, 2, 3].map((t) => ({ t, y: 5 + 2 * t })))).toEqual({ slope: 2, error: 0 });
    // Flat with noise: a slope of 0 and an error that covers the noise.
    const noisy = fit([10, 12, 10, 12, 10, 12].map((y, t) => ({ t, y })));
    expect(noisy.slope).toBeCloseTo(3 / 17.5, 6);
    expect(verdict(noisy)).toBe('0 within 2 standard errors');
    expect(fit([{ t: 1, y: 3 }])).toEqual({ slope: 0, error: 0 });
  });

  it('says a slope is 0 only within twice its standard error', () => {
    expect(verdict({ slope: 3, error: 2 })).toBe('0 within 2 standard errors');
    expect(verdict({ slope: -39, error: 17 })).toBe('not 0: 2.3 standard errors');
    expect(verdict({ slope: 1, error: 0 })).toBe('not 0');
  });

  it('cuts the run in thirds by time, and gives each third its pace', () => {
    const events = [0.05, 0.1, 0.2, 0.4, 0.45, 0.7, 0.8, 0.9, 0.95].map((t) => ({ t }));
    const [a, b, c] = thirds(events, 0.9);
    expect([a.length, b.length, c.length]).toEqual([3, 2, 4]);
    // 0.9 h: thirds of 1,080 s.
    expect(ratesOfThirds(events, 0.9)).toEqual([3 / 1080, 2 / 1080, 4 / 1080]);
    expect(median([3, 1, 2])).toBe(2);
    expect(median([])).toBeNaN();
  });

  it('says how many executions the retentions hold at a steady pace', () => {
    // Two a second, each held 1 s running, 60 s with its result, 120 s more as a record, and
    // 2.5 s on average until the sweep that deletes it.
    expect(heldAtPace(2, { runSeconds: 1, retentionS: 60, recordRetentionS: 120, sweepIntervalS: 5 })).toBe(367);
  });

  it('wants a warm-up at least as long as an execution is held', () => {
    expect(warmupCovers(12, 185)).toBe(true);
    expect(warmupCovers(9, 185)).toBe(false);
  });
});

describe('what the soak reads of a process', () => {
  it('splits the RSS by mapping: V8\'s pages, glibc\'s arenas, files, the rest', () => {
    const map = (range: string, perms: string, name: string, rssKb: number): string =>
      `${range} ${perms} 00000000 00:00 0 ${name}\nSize:  1 kB\nRss:   ${rssKb} kB\nPss:   ${rssKb} kB\nVmFlags: rd wr mr mw me ac`;
    const smaps = [
      map('00400000-00746000', 'r--p', '                  /usr/bin/node', 3352),
      map('01000000-02000000', 'rw-p', '[heap]', 1000),
      // A thread arena: 64 MiB-aligned, its read-write part and the reserved rest.
      map('7fc528000000-7fc5285d1000', 'rw-p', '', 5956),
      map('7fc5285d1000-7fc52c000000', '---p', '', 0),
      // Two V8 pages of 256 KiB, one not 64 MiB-aligned.
      map('7fc52c100000-7fc52c140000', 'rw-p', '', 256),
      map('7fc530040000-7fc530080000', 'rw-p', '', 200),
      // A thread's stack: 8 MiB, not aligned.
      map('7fc532801000-7fc533001000', 'rw-p', '', 40),
      map('7ffd00000000-7ffd00021000', 'rw-p', '[stack]', 132),
    ].join('\n');
    expect(rssSplit(smaps)).toEqual({ v8Pages: 456 * 1024, arenas: (1000 + 5956) * 1024, files: 3352 * 1024, otherAnon: (40 + 132) * 1024 });
  });

  it('names descriptors by kind, and those in the data folder by its first folder', () => {
    expect(descriptorKind('socket:[12345]', '/d')).toBe('socket');
    expect(descriptorKind('pipe:[77]', '/d')).toBe('pipe');
    expect(descriptorKind('anon_inode:[eventpoll]', '/d')).toBe('anon_inode:eventpoll');
    expect(descriptorKind('anon_inode:[io_uring]', '/d')).toBe('anon_inode:io_uring');
    expect(descriptorKind('/d/engine/results/01J.duckdb', '/d')).toBe('data folder: engine');
    expect(descriptorKind('/dx/file', '/d')).toBe('other file');
  });
});
