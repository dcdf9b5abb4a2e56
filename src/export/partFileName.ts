/**
 * Deterministic names: the same execution exported twice gives the same names, so a retry
 * overwrites instead of duplicating. The part number counts files across all partitions.
 */
export function partFileName(executionId: string, part: number, extension: string, directory = ''): string {
  const name = `part-${String(part).padStart(5, '0')}-${safeId(executionId)}.${extension}`;
  return directory === '' ? name : `${directory}/${name}`;
}

function safeId(id: string): string {
  return id.replace(/[^A-Za-z0-9._-]/g, '_');
}
