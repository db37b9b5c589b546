import { posix } from 'node:path';
import { pack as tarPack } from 'tar-stream';
import type { ContainerEngine } from '../engine/container-engine.js';
import { SandboxError } from '../errors.js';
import { swallowed } from '../debug.js';
import { trimUtf8End } from '../capture/stream-window.js';
import { BOUNDS } from '../config/config-schema.js';
import { FileMover, type MoverAnswer } from './file-mover.js';
import {
  type DirectoryEntry,
  exitMeaning,
  FILE_OP_TIMEOUT_SECONDS,
  type FileOpArgs,
  fileOpArgs,
  fileOpCommand,
  LINE_COUNT_LIMIT_BYTES,
  LIST_OUTPUT_MAX_BYTES,
  parseListOutput,
  parsePlaced,
  parseReadOutput,
  totalLines as linesOf,
} from './file-op-protocol.js';
import { stagedName } from './mover-protocol.js';

export type { DirectoryEntry } from './file-op-protocol.js';

/**
 * Files inside a container's working folder (seed 002): read a range of lines, get and put
 * exact bytes, list, edit one occurrence. Paths are checked twice: here by their text (a
 * relative path is taken from the working folder, as the seed's resolvePath does; `..` that
 * climbs out and absolute paths elsewhere are refused), and in the container against its
 * real file system at the moment of use (scripts/container/file-op.sh: a symlink that
 * leads out is refused, however and whenever it was made). Contents are read on an exec's
 * stdout, and written through the engine's archive API; never on a command line.
 *
 * The archive API writes as root and follows links inside the container, so a file is
 * staged at the top of the working folder (a mount point, or a folder only the container's
 * root could swap), under a name nobody can guess, and then moved into place by the
 * container user: the folder is checked, and the user's permissions apply, as for every
 * other operation.
 */

export interface FileLimits {
  /** Most bytes of text a read returns. */
  maxReadBytes: number;
  /** Most lines a read returns. */
  maxReadLines: number;
  /** Largest file written (or edited). */
  maxWriteBytes: number;
  /** Most entries a listing returns. */
  maxListEntries: number;
  /** Deepest a listing goes. */
  maxListDepth: number;
}

export interface ReadFileResult {
  /** The real path read, absolute. */
  path: string;
  totalBytes: number;
  totalLines: number;
  /** Binary files (NUL bytes, or not UTF-8) are described, never returned. */
  binary: boolean;
  /** The lines returned, 1-based and inclusive; 0 and 0 when none were. */
  startLine: number;
  endLine: number;
  /** The lines startLine..endLine, as they are in the file. */
  text: string;
  /** What was left out of the range asked, when something was. */
  note?: string;
}

export interface WriteFileResult {
  path: string;
  bytesWritten: number;
  created: boolean;
}

export interface ListDirectoryResult {
  path: string;
  entries: DirectoryEntry[];
  note?: string;
}

export interface EditFileResult {
  path: string;
  bytesWritten: number;
}

/**
 * The absolute path `path` names inside `workdir`: relative paths are taken from it, and the
 * result must be the working folder or inside it.
 * @throws SandboxError INVALID_ARGUMENT (empty, NUL), POLICY_VIOLATION (outside)
 */
export function resolveContainerPath(workdir: string, path: string): string {
  if (typeof path !== 'string' || path.trim() === '') throw new SandboxError('INVALID_ARGUMENT', 'path is empty.');
  if (path.includes('\0')) throw new SandboxError('INVALID_ARGUMENT', 'path contains a NUL byte.');
  const root = posix.normalize(workdir).replace(/\/+$/, '') || '/';
  const full = posix.normalize(path.startsWith('/') ? path : `${root}/${path}`).replace(/(.)\/+$/, '$1');
  if (full !== root && !full.startsWith(root === '/' ? '/' : `${root}/`)) {
    throw new SandboxError(
      'POLICY_VIOLATION',
      `${JSON.stringify(path)} is outside the container's working folder ${root}${path.startsWith('/') ? '' : " (a '..' climbs out of it)"}.`,
      { data: { rule: 'container path', path } },
    );
  }
  return full;
}

/** The 1-based inclusive line range a read returns, within the limits. */
export function lineRange(startLine: number | undefined, endLine: number | undefined, maxLines: number): { first: number; last: number } {
  for (const [name, v] of [
    ['startLine', startLine],
    ['endLine', endLine],
  ] as const) {
    if (v !== undefined && (!Number.isSafeInteger(v) || v < 1))
      throw new SandboxError('INVALID_ARGUMENT', `${name} must be a whole number from 1, not ${v}.`);
  }
  if (!Number.isSafeInteger(maxLines) || maxLines < 1)
    throw new SandboxError('INVALID_ARGUMENT', `maxLines must be a whole number from 1, not ${maxLines}.`);
  const first = startLine ?? 1;
  const asked = endLine === undefined ? first + maxLines - 1 : endLine;
  if (asked < first) throw new SandboxError('INVALID_ARGUMENT', `endLine (${asked}) is before startLine (${first}).`);
  return { first, last: Math.min(asked, first + maxLines - 1) };
}

/** Text a model can read: no NUL byte, and valid UTF-8. */
export function isText(bytes: Buffer): boolean {
  if (bytes.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/** How many times `needle` occurs in `text`, overlapping ones too ("aa" twice in "aaa": which one is meant is unclear). */
export function occurrences(text: string, needle: string): number {
  if (needle === '') return 0;
  let n = 0;
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + 1)) n++;
  return n;
}

/** A whole number of bytes or lines from 1 to `max`. */
function limit(name: string, v: number | undefined, fallback: number, max: number): number {
  const n = v ?? fallback;
  if (!Number.isSafeInteger(n) || n < 1 || n > max)
    throw new SandboxError('INVALID_ARGUMENT', `${name} must be a whole number from 1 to ${max}, not ${n}.`);
  return n;
}

/** Now, as a tar PAX time (seconds with a fraction): the file's mtime keeps sub-second precision. */
function paxNow(): string {
  return ((performance.timeOrigin + performance.now()) / 1000).toFixed(9);
}

/**
 * A tar archive of one regular file, as a stream of its parts (tar-stream; a PAX record
 * carries the time, to the nanosecond). The content is not copied into one archive buffer:
 * sent as it is made, a 10 MB write is about 3 ms sooner (bench/files.mjs).
 */
export function singleFileTar(name: string, bytes: Buffer, meta: { mode: number; uid: number; gid: number }): AsyncIterable<Buffer> {
  const pack = tarPack();
  const mtime = paxNow();
  pack.entry(
    { name, size: bytes.length, mode: meta.mode, uid: meta.uid, gid: meta.gid, mtime: new Date(Number(mtime) * 1000), pax: { mtime } },
    bytes,
  );
  pack.finalize();
  return pack as AsyncIterable<Buffer>;
}

interface OpResult {
  exitCode: number | null;
  stdout: Buffer;
  stderr: string;
}

export class ContainerFiles {
  private readonly mover: FileMover;

  constructor(
    private readonly engine: ContainerEngine,
    private readonly containerId: string,
    private readonly workdir: string,
    private readonly limits: FileLimits,
    /** The container user's ids as the host gave them (a numeric uid:gid); the mover's greeting otherwise. */
    private readonly hostIds?: { uid: number; gid: number },
  ) {
    this.mover = new FileMover(engine, containerId, workdir);
  }

  private async op(args: FileOpArgs, options: { maxStdout?: number } = {}): Promise<OpResult> {
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = '';
    const max = options.maxStdout ?? Number.MAX_SAFE_INTEGER;
    const s = await this.engine.exec(this.containerId, { cmd: fileOpCommand(args) }, (stream, chunk) => {
      if (stream === 'stderr') {
        if (err.length < 4096) err += chunk.toString('utf8');
      } else if (outBytes < max) {
        const take = chunk.subarray(0, max - outBytes);
        out.push(Buffer.from(take));
        outBytes += take.length;
      }
    });
    const { exitCode } = await s.done;
    return { exitCode, stdout: Buffer.concat(out), stderr: err.trim() };
  }

  /** Turns a failed operation into the error its exit code means. */
  private fail(path: string, r: OpResult, what: string): never {
    const message = r.stderr || `${what} failed (exit ${r.exitCode})`;
    const reason = exitMeaning(r.exitCode);
    if (reason === 'outside')
      throw new SandboxError('POLICY_VIOLATION', `${JSON.stringify(path)} leads ${message} (a symlink out of ${this.workdir}).`, {
        data: { rule: 'container path', path },
      });
    const why = reason === 'timed out' ? `it took longer than ${FILE_OP_TIMEOUT_SECONDS} s` : message;
    throw new SandboxError('FILE_OPERATION_FAILED', `Could not ${what} ${JSON.stringify(path)}: ${why}.`, { data: { path, reason } });
  }

  /** The absolute path of a file: the working folder itself is not one. */
  private filePath(path: string): string {
    const full = resolveContainerPath(this.workdir, path);
    if (full === (posix.normalize(this.workdir).replace(/(.)\/+$/, '$1') || '/'))
      throw new SandboxError('INVALID_ARGUMENT', `${JSON.stringify(path)} names the working folder, not a file.`);
    return full;
  }

  async readFile(
    path: string,
    options: { startLine?: number; endLine?: number; maxBytes?: number; maxLines?: number } = {},
  ): Promise<ReadFileResult> {
    const full = this.filePath(path);
    const maxBytes = limit('maxBytes', options.maxBytes, this.limits.maxReadBytes, BOUNDS.stdinBytes.max);
    const { first, last } = lineRange(
      options.startLine,
      options.endLine,
      limit('maxLines', options.maxLines, this.limits.maxReadLines, 1_000_000),
    );
    // One byte more than the cap: whether the range was cut shows.
    const r = await this.op(fileOpArgs.read(this.workdir, full, first, last, maxBytes + 1), { maxStdout: maxBytes + 512 });
    if (r.exitCode !== 0) this.fail(path, r, 'read');
    const read = parseReadOutput(r.stdout);
    if (!read)
      throw new SandboxError('FILE_OPERATION_FAILED', `Could not read ${JSON.stringify(path)}: an unexpected answer.`, {
        data: { path, reason: 'failed' },
      });
    const { header } = read;
    const totalBytes = header.size;
    const totalLines = linesOf(header);
    let body = read.body;
    const cut = body.length > maxBytes;
    // Cut at the last whole line, else at the last whole character (never in the middle of one).
    if (cut) body = trimUtf8End(body.subarray(0, body.lastIndexOf(10, maxBytes - 1) + 1 || maxBytes));
    if (header.nulBytes > 0 || !isText(body)) {
      return {
        path: full,
        totalBytes,
        totalLines,
        binary: true,
        startLine: 0,
        endLine: 0,
        text: '',
        note: `binary file (${totalBytes} bytes): not shown`,
      };
    }
    let text = body.toString('utf8');
    // A last line without a newline stays without one (busybox sed adds it).
    if (!header.endsWithNewline && text.endsWith('\n') && first + text.split('\n').length - 2 >= totalLines) text = text.slice(0, -1);
    const returned = text === '' ? 0 : text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    const endLine = returned ? first + returned - 1 : 0;
    const gib = LINE_COUNT_LIMIT_BYTES / 1024 ** 3;
    const notes: string[] = header.partial ? [`the file is larger than ${gib} GiB: ${totalLines} lines counted in its first GiB`] : [];
    if (first > totalLines && totalLines > 0) notes.push(`the file has ${totalLines} lines`);
    else if (endLine && endLine < Math.min(last, totalLines))
      notes.push(`cut at ${maxBytes} bytes: lines ${endLine + 1}-${Math.min(options.endLine ?? totalLines, totalLines)} not shown`);
    else if (endLine && endLine < totalLines && options.endLine === undefined)
      notes.push(`lines ${endLine + 1}-${totalLines} not shown (at most ${last - first + 1} lines a read)`);
    return {
      path: full,
      totalBytes,
      totalLines,
      binary: false,
      startLine: returned ? first : 0,
      endLine,
      text,
      ...(notes.length ? { note: notes.join('; ') } : {}),
    };
  }

  /** The file's exact bytes (up to `maxBytes`, else FILE_OPERATION_FAILED). */
  async readFileBytes(path: string, options: { maxBytes?: number } = {}): Promise<Buffer> {
    const full = this.filePath(path);
    const max = limit('maxBytes', options.maxBytes, this.limits.maxWriteBytes, BOUNDS.stdinBytes.max);
    const r = await this.op(fileOpArgs.get(this.workdir, full, max), { maxStdout: max + 1 });
    if (r.exitCode !== 0) this.fail(path, r, 'read');
    if (r.stdout.length > max)
      throw new SandboxError('FILE_OPERATION_FAILED', `${JSON.stringify(path)} is larger than ${max} bytes.`, {
        data: { path, reason: 'too large' },
      });
    return r.stdout;
  }

  async writeFile(path: string, content: string | Buffer): Promise<WriteFileResult> {
    const full = this.filePath(path);
    const bytes = Buffer.isBuffer(content) ? content : Buffer.from(content, 'utf8');
    if (bytes.length > this.limits.maxWriteBytes)
      throw new SandboxError(
        'INVALID_ARGUMENT',
        `content is ${bytes.length} bytes; at most ${this.limits.maxWriteBytes} (files.maxWriteBytes).`,
      );
    // Staged under a name nobody can guess at the top of the working folder, then moved into
    // place by the container user (file-mover.ts), whose permissions and checks are those of
    // every other operation.
    const staged = stagedName();
    const [rootLookup, ownerLookup] = await Promise.allSettled([
      this.engine.statPath(this.containerId, this.workdir),
      // The owner of the staged copy: from the host where it chose the user, never from the
      // container (its greeting then only says the mover is alive).
      this.hostIds ?? this.mover.userIds(path),
    ]);
    if (rootLookup.status === 'rejected') throw rootLookup.reason;
    const root = rootLookup.value;
    // The engine follows links: the working folder, where the file is staged, must be itself.
    if (root?.type !== 'dir')
      throw new SandboxError(
        'POLICY_VIOLATION',
        `${JSON.stringify(path)} cannot be written: the working folder ${this.workdir} ${root ? `is a ${root.type}${root.linkTarget ? ` to ${root.linkTarget}` : ''}` : 'does not exist'}, not a folder.`,
        { data: { rule: 'container path', path } },
      );
    if (ownerLookup.status === 'rejected') throw ownerLookup.reason;
    // 0600: the engine sets the mode by path, following links, after it has written the file;
    // a process of the user that swaps the copy for a link meanwhile can only tighten what
    // the link leads to. The mover gives the file its real mode (and checks its owner).
    const archive = singleFileTar(staged, bytes, { mode: 0o600, ...ownerLookup.value });
    let answer: MoverAnswer;
    try {
      await this.engine.extractArchive(this.containerId, this.workdir, archive).catch((e: unknown) => {
        if (!(e instanceof SandboxError && e.code === 'FILE_OPERATION_FAILED')) throw e;
        throw new SandboxError('FILE_OPERATION_FAILED', `Could not write ${JSON.stringify(path)}: ${e.message}.`, {
          cause: e,
          data: { path, reason: 'cannot write' },
        });
      });
      answer = await this.mover.place(staged, full, path);
    } catch (e) {
      // A disk filled half way leaves part of the file; a mover that failed leaves all of it.
      await this.mover.discard(staged, path).catch((err: unknown) => swallowed('removing a staged write', err));
      throw e;
    }
    if (answer.code !== 0) this.fail(path, { exitCode: answer.code, stdout: Buffer.alloc(0), stderr: answer.text }, 'write');
    return { path: full, bytesWritten: bytes.length, created: parsePlaced(answer.text)?.created ?? false };
  }

  async listDirectory(path = '.', options: { depth?: number } = {}): Promise<ListDirectoryResult> {
    const full = resolveContainerPath(this.workdir, path);
    const depth = Math.max(1, Math.min(Math.floor(options.depth ?? 1), this.limits.maxListDepth));
    const r = await this.op(fileOpArgs.list(this.workdir, full, depth), { maxStdout: LIST_OUTPUT_MAX_BYTES });
    if (r.exitCode !== 0) this.fail(path, r, 'list');
    const { entries, complete } = parseListOutput(r.stdout);
    entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    const shown = entries.slice(0, this.limits.maxListEntries);
    const notes: string[] = [];
    if (shown.length < entries.length || !complete)
      notes.push(`${complete ? entries.length : 'more than ' + entries.length} entries: the first ${shown.length} shown`);
    if ((options.depth ?? 1) > depth) notes.push(`depth limited to ${depth}`);
    return { path: full, entries: shown, ...(notes.length ? { note: notes.join('; ') } : {}) };
  }

  /** Replaces exactly one occurrence of `oldText`; any other count is INVALID_ARGUMENT, saying how many. */
  async editFile(path: string, oldText: string, newText: string): Promise<EditFileResult> {
    if (oldText === '') throw new SandboxError('INVALID_ARGUMENT', 'oldText is empty.');
    const bytes = await this.readFileBytes(path, { maxBytes: this.limits.maxWriteBytes });
    if (!isText(bytes)) throw new SandboxError('INVALID_ARGUMENT', `${JSON.stringify(path)} is not a text file.`);
    const text = bytes.toString('utf8');
    const count = occurrences(text, oldText);
    if (count !== 1)
      throw new SandboxError(
        'INVALID_ARGUMENT',
        count === 0
          ? `oldText was not found in ${JSON.stringify(path)}: it must match exactly, whitespace included.`
          : `oldText occurs ${count} times in ${JSON.stringify(path)}: give more of the text around it, so that it occurs once.`,
        { data: { occurrences: count } },
      );
    const i = text.indexOf(oldText);
    const written = await this.writeFile(path, text.slice(0, i) + newText + text.slice(i + oldText.length));
    return { path: written.path, bytesWritten: written.bytesWritten };
  }
}
