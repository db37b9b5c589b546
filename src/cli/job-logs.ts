import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import type { Config } from '../config/config-schema.js';
import { SandboxError } from '../errors.js';
import { poll } from '../retry.js';
import { checkedLogPath, jobsDir, readRecord, supervisorAlive, unknownId } from './jobs.js';
import { findJob } from './ps.js';

/** How often `logs --follow` looks for new output and for the job's end. */
const FOLLOW_INTERVAL_MS = 250;
const CHUNK = 64 * 1024;

/** Copies the file from `pos` to its current end; returns the new position. */
function copyFrom(fd: number, pos: number, write: (chunk: Buffer) => void): number {
  const buf = Buffer.alloc(CHUNK);
  for (;;) {
    const n = readSync(fd, buf, 0, CHUNK, pos);
    if (n === 0) return pos;
    write(Buffer.from(buf.subarray(0, n)));
    pos += n;
  }
}

/** Where the last `lines` lines of the file start (a last line without its newline counts as one). */
function tailStart(fd: number, size: number, lines: number): number {
  const buf = Buffer.alloc(CHUNK);
  let seen = 0;
  let end = size;
  // The file's last byte ends the last line; it is not a break before another one.
  let skipLast = true;
  while (end > 0) {
    const start = Math.max(0, end - CHUNK);
    const n = readSync(fd, buf, 0, end - start, start);
    for (let i = n - 1; i >= 0; i--) {
      if (buf[i] !== 10) {
        skipLast = false;
        continue;
      }
      if (skipLast) {
        skipLast = false;
        continue;
      }
      if (++seen === lines) return start + i + 1;
    }
    end = start;
  }
  return 0;
}

/**
 * `logs`: the job's full log from disk (the file its command's capture writes, within
 * logs.maxCommandBytes), as the command printed it; `tail` only its last lines; `follow`
 * then prints what comes until the job has ended. The path comes from the job's record and
 * is read only when it is a regular file of this user's inside the log folder, never
 * through a link.
 */
export async function logs(
  config: Config,
  id: string,
  o: { follow: boolean; tail?: number },
  write: (chunk: Buffer) => void,
): Promise<number> {
  const dir = jobsDir(config.logs.dir);
  const job = findJob(dir, id);
  if (!job) throw unknownId(id);
  if (job.logPath === undefined) {
    const why = job.error ? `it failed to start: ${job.error.code}: ${job.error.message}` : 'its command has not started yet';
    throw new SandboxError('INVALID_ARGUMENT', `Job ${job.id} has no log: ${why}`);
  }
  const path = checkedLogPath(config.logs.dir, job);
  if (!path)
    throw new SandboxError(
      'INVALID_ARGUMENT',
      `The record of job ${job.id} does not name a log file of yours inside the log folder (${config.logs.dir}): it is not read.`,
    );
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    let pos = o.tail !== undefined ? tailStart(fd, fstatSync(fd).size, o.tail) : 0;
    pos = copyFrom(fd, pos, write);
    if (o.follow) {
      await poll(
        () => {
          pos = copyFrom(fd, pos, write);
          const now = readRecord(dir, job.id);
          const running = now !== undefined && (now.state === 'running' || now.state === 'starting') && supervisorAlive(now);
          return running ? undefined : true;
        },
        { timeoutMs: Infinity, intervalMs: FOLLOW_INTERVAL_MS },
      );
      // What the end wrote (the kept tail of a long log) comes last.
      copyFrom(fd, pos, write);
    }
  } finally {
    closeSync(fd);
  }
  return 0;
}
