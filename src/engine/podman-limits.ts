import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { swallowed } from '../debug.js';
import type { EngineConnection } from './connection.js';

/**
 * Podman, given any ulimit (the file size cap is one), adds nofile and nproc at 1048576 of
 * its own, and runc then fails to start the container wherever its hard limits are lower
 * ("error setting rlimit type 6"). The limits that matter are the Podman service's (runc
 * inherits them), so they are read from the process that listens on the engine's socket:
 * /proc/net/unix gives the socket's inode, /proc/PID/fd the process that holds it (or, for a
 * user who may not read another's fds, the command line that names the socket).
 * On a remote engine, or when /proc does not tell, this process's own limits are used.
 */

export type LimitRow = 'Max open files' | 'Max processes';

/** The hard limit of one resource from a /proc/PID/limits text; undefined when unlimited or absent. */
export function hardLimit(limits: string, row: LimitRow): number | undefined {
  const line = limits.split('\n').find((l) => l.startsWith(row));
  const hard = line?.slice(row.length).trim().split(/\s+/)[1];
  return hard === undefined || !/^\d+$/.test(hard) ? undefined : Number(hard);
}

/** The inode of the listening unix socket at `path`, from a /proc/net/unix text. */
export function listeningInode(netUnix: string, path: string): string | undefined {
  for (const line of netUnix.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    // Num RefCount Protocol Flags Type St Inode Path; flags 00010000 = __SO_ACCEPTCON (listening)
    if (f.length >= 8 && f.slice(7).join(' ') === path && f[3] === '00010000') return f[6];
  }
  return undefined;
}

/** The pid of the process that holds socket `inode` open. */
function holderOf(inode: string): number | undefined {
  const target = `socket:[${inode}]`;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone, or another user's
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === target) return Number(pid);
      } catch {
        // closed while we looked
      }
    }
  }
  return undefined;
}

/**
 * The pid of a `podman system service` started on `socketPath`, from the command lines in /proc
 * (readable by every user, unlike another user's /proc/PID/fd): how a user who is not root finds
 * a rootful service's limits.
 */
function serviceNamed(socketPath: string): number | undefined {
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let args: string[];
    try {
      args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // gone
    }
    if (args.includes('service') && (args.includes(`unix://${socketPath}`) || args.includes(socketPath))) return Number(pid);
  }
  return undefined;
}

/** The /proc/PID/limits text of the engine's service when it is local and /proc tells, else this process's. */
export function serviceLimits(conn: EngineConnection): string | undefined {
  try {
    if (conn.kind === 'socket') {
      const inode = listeningInode(readFileSync('/proc/net/unix', 'utf8'), conn.socketPath);
      const pid = (inode ? holderOf(inode) : undefined) ?? serviceNamed(conn.socketPath);
      if (pid !== undefined) return readFileSync(`/proc/${pid}/limits`, 'utf8');
    }
    return readFileSync('/proc/self/limits', 'utf8');
  } catch (e) {
    swallowed('reading the engine service limits from /proc', e);
    return undefined;
  }
}
