import { open } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import { swallowed } from '../debug.js';
import { KeyLineCollector } from './key-lines.js';

/**
 * How much of a long log the scan reads: all of it up to this size; else its first and
 * its last half of this.
 */
const LOG_SCAN_BYTES = 16 * 1024 * 1024;
const SCAN_CHUNK_BYTES = 1024 * 1024;

export interface LogScan {
  collector: KeyLineCollector;
  /** Bytes read, and the log's size: less read means the middle of a huge log was not. */
  scannedBytes: number;
  totalBytes: number;
}

/**
 * Classifies every line of a command's full log (for output whose middle was cut from
 * what the command's answer holds): the text lines, binary ones passed over, so an error
 * beside a gzip member is still found. Reads at most `maxBytes`, the start and the end of
 * a bigger log (measured: 0.26 s for 16 MiB of 80-byte log lines, 0.47 s when every line
 * is an error, 1.1 s for 16 MiB of 2-byte lines). Undefined when the log cannot be read.
 */
export async function scanLog(logPath: string, options: { maxBytes?: number } = {}): Promise<LogScan | undefined> {
  const maxBytes = options.maxBytes ?? LOG_SCAN_BYTES;
  let file;
  try {
    file = await open(logPath, 'r');
  } catch (e) {
    swallowed(`opening ${logPath} for its key lines`, e);
    return undefined;
  }
  try {
    const totalBytes = (await file.stat()).size;
    const ranges: Array<[number, number]> =
      totalBytes <= maxBytes
        ? [[0, totalBytes]]
        : [
            [0, Math.floor(maxBytes / 2)],
            [totalBytes - Math.floor(maxBytes / 2), totalBytes],
          ];
    const collector = new KeyLineCollector();
    let scannedBytes = 0;
    const buf = Buffer.allocUnsafe(SCAN_CHUNK_BYTES);
    for (const [from, to] of ranges) {
      let carry = '';
      const decoder = new StringDecoder('utf8');
      // A range that starts after a line's start has only the end of that line: skipped.
      let skipFirst = false;
      if (from > 0) {
        const { bytesRead } = await file.read(buf, 0, 1, from - 1);
        skipFirst = bytesRead === 1 && buf[0] !== 0x0a;
        collector.push('[... the middle of the log was not read ...]');
      }
      for (let pos = from; pos < to;) {
        const { bytesRead } = await file.read(buf, 0, Math.min(SCAN_CHUNK_BYTES, to - pos), pos);
        if (bytesRead === 0) break;
        pos += bytesRead;
        scannedBytes += bytesRead;
        let text = carry + decoder.write(buf.subarray(0, bytesRead));
        const endsLog = pos >= to && to >= totalBytes;
        if (endsLog) text += decoder.end();
        const end = endsLog ? text.length : text.lastIndexOf('\n') + 1;
        // A line longer than a chunk is classified by its last 64 KiB.
        carry = text.slice(end).slice(-65536);
        const lines = text.slice(0, end).split('\n');
        if (end > 0 && text[end - 1] === '\n') lines.pop();
        if (skipFirst && end === 0) continue;
        if (skipFirst) {
          lines.shift();
          skipFirst = false;
        }
        for (const line of lines) collector.push(line);
      }
      // A range that ends before the log does ends inside a line: that part is not read.
      if (carry && !skipFirst && to >= totalBytes) collector.push(carry);
    }
    return { collector, scannedBytes, totalBytes };
  } catch (e) {
    swallowed(`scanning ${logPath}`, e);
    return undefined;
  } finally {
    await file.close().catch((e: unknown) => swallowed(`closing ${logPath}`, e));
  }
}
