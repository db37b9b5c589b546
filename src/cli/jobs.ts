import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { z } from 'zod';
import { swallowed } from '../debug.js';
import { SandboxError } from '../errors.js';
import { isWithin } from '../paths.js';
import { processAlive } from '../sandbox/sweep.js';
import { processStart } from '../sandbox/labels.js';

/**
 * The records of background jobs (`run --background`): one small JSON file per job in
 * `<logs.dir>/jobs/`, a folder of this user's only (0700, files 0600), each written whole
 * through a rename. `ps`, `logs` and `kill` are other processes reading them: every record
 * is parsed with a schema and a bad one is as good as absent; the log path in it is
 * followed only when it is a regular file of this user's inside the log folder.
 */

const myUid = typeof process.getuid === 'function' ? process.getuid() : undefined;

/** A job id: `j` and 6 hex digits, typed by a person; never a path. */
export const JOB_ID = /^j[0-9a-f]{6}$/;
/** What `kill` and `logs` accept before anything is looked up: a job id or a container name, never a path. */
const LOOKUP_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
/** A record is a few hundred bytes; a bigger file is not one of ours. */
const MAX_RECORD_BYTES = 64 * 1024;

export const JobRecordSchema = z.object({
  id: z.string().regex(JOB_ID),
  /** The supervisor: its host, pid and start (`processStart`), so a reused pid is never taken for it. */
  host: z.string(),
  pid: z.number().int().positive(),
  pidStart: z.string().optional(),
  command: z.string(),
  image: z.string().optional(),
  started: z.string(),
  state: z.enum(['starting', 'running', 'ended', 'failed']),
  container: z.object({ id: z.string().regex(/^[0-9a-f]{12,64}$/), name: z.string() }).optional(),
  expiresAt: z.string().optional(),
  logPath: z.string().optional(),
  /** At its end: how it ended, its exit code (null when the engine could not tell), and when. */
  exitCode: z.number().int().nullable().optional(),
  reason: z.enum(['exited', 'killed', 'timed out', 'expired', 'container gone', 'failed']).optional(),
  ended: z.string().optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});
export type JobRecord = z.infer<typeof JobRecordSchema>;

export function newJobId(): string {
  return `j${randomBytes(3).toString('hex')}`;
}

/**
 * The jobs folder, made on first use and checked every time: a real folder (not a link),
 * this user's, closed to everyone else.
 * @throws SandboxError INVALID_ARGUMENT saying what is wrong with it.
 */
export function jobsDir(logsDir: string): string {
  mkdirSync(logsDir, { recursive: true, mode: 0o700 });
  const dir = join(realpathSync(logsDir), 'jobs');
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  const st = lstatSync(dir);
  const problem = !st.isDirectory()
    ? 'is not a folder (a link or a file is there)'
    : myUid !== undefined && st.uid !== myUid
      ? `belongs to uid ${st.uid}, not to this user`
      : (st.mode & 0o077) !== 0
        ? `can be read or changed by others (mode ${(st.mode & 0o777).toString(8)})`
        : undefined;
  if (problem) throw new SandboxError('INVALID_ARGUMENT', `The jobs folder ${dir} ${problem}: remove it, and it is made again.`);
  return dir;
}

/** Writes a job's record whole: a new file of this user's, then renamed over the old one. */
export function writeRecord(dir: string, record: JobRecord): void {
  const tmp = join(dir, `.${record.id}.${randomBytes(4).toString('hex')}.tmp`);
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, `${JSON.stringify(JobRecordSchema.parse(record))}\n`);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, join(dir, `${record.id}.json`));
}

/** A regular file of this user's, opened without following a link, or undefined. */
function readOwnFile(path: string, maxBytes: number): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const st = fstatSync(fd);
    if (!st.isFile() || (myUid !== undefined && st.uid !== myUid) || st.size > maxBytes) return undefined;
    return readFileSync(fd, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') swallowed(`reading ${path}`, e);
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The record of job `id`, or undefined when there is none or it is not a good one. */
export function readRecord(dir: string, id: string): JobRecord | undefined {
  if (!JOB_ID.test(id)) return undefined;
  const text = readOwnFile(join(dir, `${id}.json`), MAX_RECORD_BYTES);
  if (text === undefined) return undefined;
  try {
    const r = JobRecordSchema.safeParse(JSON.parse(text));
    // A record under another job's name is not that job's.
    return r.success && r.data.id === id ? r.data : undefined;
  } catch {
    return undefined;
  }
}

/** Every good record, oldest first. */
export function listRecords(dir: string): JobRecord[] {
  const records = readdirSync(dir)
    .map((name) => /^(j[0-9a-f]{6})\.json$/.exec(name)?.[1])
    .filter((id): id is string => id !== undefined)
    .map((id) => readRecord(dir, id))
    .filter((r): r is JobRecord => r !== undefined);
  return records.sort((a, b) => a.started.localeCompare(b.started));
}

/** Removes the records (and supervisor output) of jobs that ended more than `maxAgeMs` ago. */
export function pruneRecords(dir: string, maxAgeMs: number, now = Date.now()): void {
  for (const r of listRecords(dir)) {
    const ended = Date.parse(r.ended ?? '');
    if (!Number.isFinite(ended) || now - ended < maxAgeMs) continue;
    for (const file of [`${r.id}.json`, `${r.id}.out`]) {
      try {
        unlinkSync(join(dir, file));
      } catch (e) {
        swallowed(`pruning ${file}`, e);
      }
    }
  }
}

/**
 * The job's log, when its record names one that may be read: an absolute path inside the
 * log folder (its real path), a regular file of this user's. Anything else is refused.
 */
export function checkedLogPath(logsDir: string, record: JobRecord): string | undefined {
  const p = record.logPath;
  if (p === undefined || !isAbsolute(p)) return undefined;
  let real: string;
  try {
    real = realpathSync(p);
  } catch {
    return undefined;
  }
  if (real !== p || !isWithin(real, realpathSync(logsDir))) return undefined;
  const st = lstatSync(real);
  return st.isFile() && (myUid === undefined || st.uid === myUid) ? real : undefined;
}

/** Is the job's supervisor still running (the same process, not a reuse of its pid)? */
export function supervisorAlive(record: JobRecord): boolean {
  if (record.host !== hostname() || !processAlive(record.pid)) return false;
  return record.pidStart === undefined || processStart(record.pid) === record.pidStart;
}

/** The real uid of a process of this host, from /proc; undefined when it cannot be read. */
export function processUid(pid: number): number | undefined {
  try {
    const m = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

export { myUid };

/** @throws SandboxError INVALID_ARGUMENT for text that cannot be a job id or container name (a path, say). */
export function checkLookupId(id: string): void {
  if (!LOOKUP_ID.test(id)) throw unknownId(id);
}

/** The sentence for an id that is not one of this user's jobs or containers. */
export function unknownId(id: string): SandboxError {
  return new SandboxError(
    'INVALID_ARGUMENT',
    `${JSON.stringify(id.length > 80 ? `${id.slice(0, 80)}…` : id)} is not a background job or container of yours: \`genaicode-docker ps --all\` lists their ids.`,
  );
}
