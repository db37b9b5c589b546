/**
 * The `reason` of a command's result: why it ended, when we know more than its exit code
 * says, in one sentence a model or a person can act on.
 */
export function explainResult(
  info: { memoryBytes: number; pidsLimit: number },
  diskLimitBytes: number,
  f: {
    timedOut: boolean;
    canceled: boolean;
    oomKilled: boolean;
    pidsLimitHit: boolean;
    overlapped: boolean;
    timeoutMs: number;
    killReport?: string;
    logError?: string;
    lost?: string;
    diskUsed?: number;
    /** Whether the command was still running when the disk limit was found passed (then it was killed). */
    diskKilled?: boolean;
    /** The limit was found passed between commands, before this one: the processes left running were stopped. */
    diskBetween?: { usedBytes: number; killReport: string };
  },
): string | undefined {
  const parts: string[] = [];
  if (f.lost) parts.push(f.lost);
  if (f.diskBetween) {
    const killed = /^gone (\d+)$/.exec(f.diskBetween.killReport);
    parts.push(
      `before this command, between commands, the container's own files passed the disk limit (${Math.round(f.diskBetween.usedBytes / 1024 ** 2)} MiB, over ${Math.round(diskLimitBytes / 1024 ** 2)} MiB, limits.disk): ` +
        `${killed ? `the ${killed[1]} processes left running were killed` : `stopping the processes left running: ${f.diskBetween.killReport}`}; remove files, or start a new container`,
    );
  }
  if (f.diskUsed !== undefined) {
    parts.push(
      `wrote past the disk limit: the container's own files take ${Math.round(f.diskUsed / 1024 ** 2)} MiB, over ${Math.round(diskLimitBytes / 1024 ** 2)} MiB (limits.disk)${f.diskKilled ? '; its process tree was killed' : ''}: remove files, or start a new container`,
    );
  }
  // Said only when the kill script found none of it left; else what survived is named.
  const survivors = f.killReport && !f.killReport.startsWith('gone') ? f.killReport : undefined;
  const tree = survivors ? `its process tree was killed but for what survived (${survivors})` : 'its process tree was killed';
  if (f.timedOut) parts.push(`timed out after ${f.timeoutMs} ms; ${tree}`);
  if (f.canceled) parts.push(`canceled; ${tree}`);
  if (f.oomKilled) parts.push(`killed by the memory limit (${Math.round(info.memoryBytes / 1024 ** 2)} MiB)`);
  if (f.pidsLimitHit) parts.push(`hit the process limit (${info.pidsLimit} processes): forks were refused`);
  if (f.overlapped && (f.oomKilled || f.pidsLimitHit)) {
    // The counters are the container's: a command running beside this one may be the one that hit the limit.
    parts.push('another command ran in this container at the same time, and the limit may have hit that one instead');
  }
  if (survivors && !f.timedOut && !f.canceled) parts.push(`cleanup: ${survivors}`);
  if (f.logError) parts.push(`the full log could not be written (${f.logError})`);
  return parts.length ? parts.join('; ') : undefined;
}
