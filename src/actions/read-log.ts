import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod/v4';
import { SandboxError } from '../errors.js';
import { isWithin, realPathOf } from '../paths.js';
import { defineActionSpec } from './action-spec.js';
import { numbered } from './answers.js';

/**
 * A full command log, read by line range: the answers give the key lines and a summary,
 * and the log on disk has every byte; a client whose own file tools cannot reach the log
 * folder reads it here. Only files under the log folder (logs.dir) are read.
 */

const lineArg = z.number().int().min(1);

export const READ_LOG = defineActionSpec({
  name: 'readLog',
  description: 'Read lines of the full log of a command (the logPath of an answer), from the log folder on the host.',
  returns: '{ logPath, startLine, endLine, text, totalLines? (when the end was reached), note? } with numbered lines',
  note: 'Only files under the log folder (logs.dir) can be read.',
  args: z.object({
    logPath: z.string().min(1, 'logPath is required').max(4096, 'logPath is at most 4096 characters').describe('logPath from an answer'),
    startLine: lineArg.optional().describe('first line to read (1-based; default 1)'),
    endLine: lineArg.optional().describe('last line to read (inclusive)'),
  }),
  configNotes: (config) => ({
    endLine: `last line to read (inclusive); at most ${config.files.maxReadLines} lines and ${config.files.maxReadBytes} bytes a read`,
  }),
});

export interface LogLines {
  logPath: string;
  startLine: number;
  endLine: number;
  text: string;
  /** Known only when the read reached the end of the file. */
  totalLines?: number;
  note?: string;
}

function notALog(logPath: string, logsDir: string): SandboxError {
  return new SandboxError('INVALID_ARGUMENT', `${logPath} is not a log of genaicode-docker: only files under ${logsDir} can be read.`, {
    data: { logPath },
  });
}

/**
 * Lines `startLine`..`endLine` of a log under `logsDir`, at most `maxLines` lines and
 * `maxBytes` bytes. The path must be inside the log folder after links are resolved, and
 * the file is opened without following a link, so a link placed in the folder leads nowhere.
 */
export async function readLogLines(
  logsDir: string,
  logPath: string,
  range: { startLine?: number | undefined; endLine?: number | undefined },
  caps: { maxLines: number; maxBytes: number },
): Promise<LogLines> {
  if (!isAbsolute(logPath)) throw notALog(logPath, logsDir);
  // Links resolved (through the deepest part that exists) before the check: a path that
  // only looks as if it were in the log folder is refused.
  const root = realPathOf(logsDir);
  const real = realPathOf(resolve(logPath));
  if (!isWithin(real, root) || real === root) throw notALog(logPath, logsDir);
  const startLine = range.startLine ?? 1;
  if (range.endLine !== undefined && range.endLine < startLine)
    throw new SandboxError('INVALID_ARGUMENT', `endLine ${range.endLine} is before startLine ${startLine}.`, {
      data: { endLine: range.endLine },
    });
  const lastWanted = Math.min(range.endLine ?? Number.MAX_SAFE_INTEGER, startLine + caps.maxLines - 1);
  const file = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW).catch((e: unknown) => {
    const missing = (e as NodeJS.ErrnoException).code === 'ENOENT';
    throw new SandboxError(
      'FILE_OPERATION_FAILED',
      missing ? `No log at ${logPath}.` : `Cannot open the log ${logPath}: ${e instanceof Error ? e.message : String(e)}`,
      {
        data: { path: logPath, reason: missing ? 'not found' : 'failed' },
      },
    );
  });
  try {
    if (!(await file.stat()).isFile())
      throw new SandboxError('FILE_OPERATION_FAILED', `${logPath} is not a file.`, { data: { path: logPath, reason: 'wrong type' } });
    const kept: Buffer[] = [];
    let keptBytes = 0;
    let line = 1;
    let cut: string | undefined;
    let reachedEnd = true;
    let endsWithNewline = true; // an empty file has no line
    // Lines are counted in the bytes as they come: a log may be far larger than one read.
    outer: for await (const chunk of file.createReadStream({ highWaterMark: 64 * 1024, autoClose: false })) {
      const buf = chunk as Buffer;
      if (buf.length) endsWithNewline = buf[buf.length - 1] === 0x0a;
      let from = 0;
      while (from < buf.length) {
        const nl = buf.indexOf(0x0a, from);
        const to = nl === -1 ? buf.length : nl + 1;
        if (line >= startLine && line <= lastWanted) {
          const piece = buf.subarray(from, to);
          if (keptBytes + piece.length > caps.maxBytes) {
            kept.push(piece.subarray(0, caps.maxBytes - keptBytes));
            keptBytes = caps.maxBytes;
            cut = `cut at ${caps.maxBytes} bytes (files.maxReadBytes): read from line ${line + 1} next`;
            reachedEnd = false;
            break outer;
          }
          kept.push(piece);
          keptBytes += piece.length;
        }
        if (nl === -1) break;
        line += 1;
        from = to;
        if (line > lastWanted) {
          reachedEnd = false;
          break outer;
        }
      }
    }
    const text = Buffer.concat(kept).toString('utf8');
    const lines = text === '' ? 0 : text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    const endLine = lines === 0 ? startLine - 1 : startLine + lines - 1;
    const totalLines = reachedEnd ? line - (endsWithNewline ? 1 : 0) : undefined;
    const moreAsked = range.endLine === undefined || range.endLine > lastWanted;
    const note =
      cut ??
      (!reachedEnd && moreAsked && endLine === lastWanted
        ? `at most ${caps.maxLines} lines a read: read from line ${endLine + 1} next`
        : undefined);
    return {
      logPath,
      startLine,
      endLine,
      text: lines === 0 ? '' : numbered({ text, startLine, endLine }),
      ...(totalLines !== undefined ? { totalLines } : {}),
      ...(note ? { note } : {}),
    };
  } finally {
    await file.close();
  }
}
