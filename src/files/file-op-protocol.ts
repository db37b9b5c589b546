import { containerScript } from '../commands/wrapper-protocol.js';
import type { FileOperationReason } from '../errors.js';

/**
 * The protocol between the file operations and the shell that does them in the container
 * (scripts/container/file-op.sh), in one place: the command line that runs it, its exit
 * codes, the header of a read, the records of a listing and the line a placed write prints.
 * Everything read from it is capped here. The mover's own framing is mover-protocol.ts.
 */

/** The script, run as `sh -c FILE_OP_SCRIPT file-op <op> <workdir> <path> [args]`. */
export const FILE_OP_SCRIPT = containerScript('file-op');

/** How long one file operation may take in the container before it is killed. */
export const FILE_OP_TIMEOUT_SECONDS = 60;

/**
 * The exec argv of one operation. `timeout -s KILL` (in busybox and coreutils alike) bounds it
 * inside the container: a pipe swapped in, a huge sparse file.
 */
export function fileOpCommand(args: FileOpArgs): string[] {
  return ['timeout', '-s', 'KILL', String(FILE_OP_TIMEOUT_SECONDS), '/bin/sh', '-c', FILE_OP_SCRIPT, 'file-op', ...args];
}

/** The arguments of each operation (file-op.sh's usage lines at its top). */
export type FileOpArgs =
  | ['read', workdir: string, path: string, first: string, last: string, maxBytes: string]
  | ['get', workdir: string, path: string, maxBytes: string]
  | ['list', workdir: string, path: string, depth: string];

export const fileOpArgs = {
  /** Lines first..last (1-based), at most `maxBytes` of them, after the header. */
  read: (workdir: string, path: string, first: number, last: number, maxBytes: number): FileOpArgs => [
    'read',
    workdir,
    path,
    String(first),
    String(last),
    String(maxBytes),
  ],
  /** The file's bytes; exit 7 when it is larger than `maxBytes`. */
  get: (workdir: string, path: string, maxBytes: number): FileOpArgs => ['get', workdir, path, String(maxBytes)],
  /** The entries under `path`, `depth` levels deep. */
  list: (workdir: string, path: string, depth: number): FileOpArgs => ['list', workdir, path, String(depth)],
};

/**
 * The exit codes file-op.sh ends with (its `exit N` lines; each prints a sentence on stderr
 * first): 3 from `outside` and enter_workdir (a real path out of the working folder), 4 a
 * folder or file that does not exist (enter, open_file, place_staged), 5 not a file
 * (open_file, place_staged), 6 place_staged cannot write, 7 `get` of a file over its cap,
 * 2 a request it cannot read; 137 is `timeout -s KILL` ending it.
 */
export const FILE_OP_EXIT = {
  badRequest: 2,
  outside: 3,
  notFound: 4,
  wrongType: 5,
  cannotWrite: 6,
  tooLarge: 7,
  killedByTimeout: 128 + 9,
} as const;

/** What a failed operation's exit code means: a path out of the working folder, or a reason. */
export function exitMeaning(exitCode: number | null): 'outside' | FileOperationReason {
  switch (exitCode) {
    case FILE_OP_EXIT.outside:
      return 'outside';
    case FILE_OP_EXIT.notFound:
      return 'not found';
    case FILE_OP_EXIT.wrongType:
      return 'wrong type';
    case FILE_OP_EXIT.cannotWrite:
      return 'cannot write';
    case FILE_OP_EXIT.tooLarge:
      return 'too large';
    case FILE_OP_EXIT.killedByTimeout:
      return 'timed out';
    default:
      return 'failed';
  }
}

/**
 * The first line a `read` prints (file-op.sh, `read)`:
 * `printf 'size=%s lines=%s lastnl=%s nul=%s partial=%s\n'`), before the lines themselves.
 */
export interface ReadHeader {
  /** The file's size in bytes. */
  size: number;
  /** Newlines in the file (in its first LINE_COUNT_LIMIT_BYTES when `partial`). */
  newlines: number;
  /** Whether its last byte is a newline. */
  endsWithNewline: boolean;
  /** NUL bytes in its first 8 KiB: then no line follows the header. */
  nulBytes: number;
  /** The file is larger than LINE_COUNT_LIMIT_BYTES: its lines were counted in that much. */
  partial: boolean;
}

/** Where a read stops counting lines (`head -c 1073741824` in file-op.sh's `read)`). */
export const LINE_COUNT_LIMIT_BYTES = 1024 ** 3;

/** The header is five numbers: anything longer before its newline is not a header. */
export const READ_HEADER_MAX_BYTES = 160;

const READ_HEADER = /^size=(\d{1,20}) lines=(\d{1,20}) lastnl=([01]) nul=(\d{1,5}) partial=([01])$/;

/** Splits a read's stdout into its header and the bytes of the lines; undefined when it has no header. */
export function parseReadOutput(stdout: Buffer): { header: ReadHeader; body: Buffer } | undefined {
  const nl = stdout.subarray(0, READ_HEADER_MAX_BYTES + 1).indexOf(10);
  if (nl === -1) return undefined;
  const m = READ_HEADER.exec(stdout.toString('latin1', 0, nl));
  if (!m) return undefined;
  return {
    header: { size: Number(m[1]), newlines: Number(m[2]), endsWithNewline: m[3] === '1', nulBytes: Number(m[4]), partial: m[5] === '1' },
    body: stdout.subarray(nl + 1),
  };
}

/** The lines of a file as a person counts them: a last line without a newline counts too (unless only part was counted). */
export function totalLines(h: ReadHeader): number {
  return h.newlines + (h.size > 0 && !h.endsWithNewline && !h.partial ? 1 : 0);
}

/** One entry of a listing. */
export interface DirectoryEntry {
  /** Relative to the folder listed. */
  path: string;
  type: 'file' | 'dir' | 'link' | 'other';
  /** Files only. */
  size?: number;
}

/** Most bytes a listing prints (`head -c 1048576` in file-op.sh's `list)`): more is cut there. */
export const LIST_OUTPUT_MAX_BYTES = 1024 * 1024;

/** A record, without its NUL: a type, a size and a name (no NUL; newlines allowed). */
const LIST_RECORD = /^(file|dir|link|other) (\d{1,20}) ([\s\S]+)$/;

/**
 * The entries of a listing's stdout, records `"<type> <size> <name>\0"` (file-op.sh's `list)`:
 * `printf "%s %s %s\0"`), and whether it was whole: output of LIST_OUTPUT_MAX_BYTES was cut
 * by the script, so its last record may be part of one and is dropped. Anything past the cap
 * is not read. A record that is not one is skipped.
 */
export function parseListOutput(stdout: Buffer): { entries: DirectoryEntry[]; complete: boolean } {
  const complete = stdout.length < LIST_OUTPUT_MAX_BYTES;
  const records = stdout.subarray(0, LIST_OUTPUT_MAX_BYTES).toString('utf8').split('\0');
  // The text after the last NUL: empty when whole, else a record cut short.
  records.pop();
  const entries: DirectoryEntry[] = [];
  for (const rec of records) {
    const m = LIST_RECORD.exec(rec);
    if (!m) continue;
    const type = m[1] as DirectoryEntry['type'];
    entries.push({ path: m[3]!, type, ...(type === 'file' ? { size: Number(m[2]) } : {}) });
  }
  return { entries, complete };
}

/** Whether a write made a new file: place_staged's last line, `printf 'new=%s\n'`; undefined when it is not there. */
export function parsePlaced(text: string): { created: boolean } | undefined {
  const m = /(?:^|\n)new=([01])$/.exec(text.trim());
  return m ? { created: m[1] === '1' } : undefined;
}
