import { randomBytes } from 'node:crypto';
import { FILE_OP_SCRIPT } from './file-op-protocol.js';

/**
 * The protocol between the mover of written files (file-mover.ts) and `file-op.sh serve`,
 * in one place: the command that starts it, the staged file's name, the request lines, the
 * greeting and the answers, with a cap on what is read. The script's side is its `serve)`
 * case and place_staged (scripts/container/file-op.sh).
 */

/** The long-lived mover in a container: `sh -c FILE_OP_SCRIPT file-op serve <workdir>`. */
export function moverCommand(workdir: string): string[] {
  return ['/bin/sh', '-c', FILE_OP_SCRIPT, 'file-op', 'serve', workdir];
}

/**
 * What a staged file's name starts with; hex follows. The mover refuses any other name
 * (`case "${st#.gcd-write-}"` in `serve)`): nothing that could lead elsewhere.
 */
export const STAGED_PREFIX = '.gcd-write-';

/** A name nobody can guess, for a file staged at the top of the working folder. */
export function stagedName(): string {
  return `${STAGED_PREFIX}${randomBytes(12).toString('hex')}`;
}

/** Whether `name` is one the mover accepts as staged (the same test as the script's). */
export function isStagedName(name: string): boolean {
  return name.startsWith(STAGED_PREFIX) && /^[0-9a-f]+$/.test(name.slice(STAGED_PREFIX.length));
}

/** A request's path, every byte but [A-Za-z0-9._/-] as a \0ooo escape (decoded by `printf '%bx'` in `serve)`). */
export function escapePath(path: string): string {
  let out = '';
  for (const byte of Buffer.from(path, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9._/-]/.test(c) ? c : `\\0${byte.toString(8).padStart(3, '0')}`;
  }
  return out;
}

/**
 * One request line, as `serve)` reads it (`read -r kind id st enc`):
 *   place <id> <staged> <escaped path>   move the staged copy to the path
 *   discard <id> <staged>                remove the staged copy
 */
export function requestLine(
  request: { kind: 'place'; id: number; staged: string; path: string } | { kind: 'discard'; id: number; staged: string },
): string {
  const fields = request.kind === 'place' ? [request.staged, escapePath(request.path)] : [request.staged];
  return `${[request.kind, String(request.id), ...fields].join(' ')}\n`;
}

/** What one request's operation printed (both streams), and its exit code (file-op.sh's codes; -1 when not a number). */
export interface MoverAnswer {
  code: number;
  text: string;
}

/**
 * The id of the greeting, the first answer (`printf '%s\000%s\000%s %s\000' 0 0 "$uid" "$gid"`),
 * and of the answer to a line it cannot read (exit 2).
 */
export const GREETING_ID = 0;

/** The user's numeric ids from the greeting's text, `<uid> <gid>`; undefined for anything else. */
export function parseGreeting(text: string): { uid: number; gid: number } | undefined {
  const m = /^(\d{1,10}) (\d{1,10})$/.exec(text);
  return m ? { uid: Number(m[1]), gid: Number(m[2]) } : undefined;
}

/** An answer's field is a path or two and a sentence: anything longer is not an answer. */
export const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * Splits the mover's output into answers: `<id>\0<exit>\0<text>\0` (`serve)`'s
 * `printf '%s\000%s\000%s\000' "$id" $? "$out"`). Bytes arrive in chunks cut anywhere; a
 * partial answer waits for the rest.
 */
export class AnswerReader {
  private pending = Buffer.alloc(0);
  private fields: string[] = [];
  private overflowed = false;

  /**
   * @param onOverflow called once, when more than MAX_ANSWER_BYTES come without the end of a
   * field: not the mover's answer (a process of the container user can write to its output),
   * and nothing more is kept.
   */
  constructor(
    private readonly onAnswer: (id: number, answer: MoverAnswer) => void,
    private readonly onOverflow: () => void = () => undefined,
  ) {}

  push(chunk: Buffer): void {
    if (this.overflowed) return;
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : Buffer.from(chunk);
    if (this.pending.length > MAX_ANSWER_BYTES && this.pending.indexOf(0) === -1) {
      this.overflowed = true;
      this.pending = Buffer.alloc(0);
      return this.onOverflow();
    }
    let at: number;
    while ((at = this.pending.indexOf(0)) !== -1) {
      this.fields.push(this.pending.toString('utf8', 0, at));
      this.pending = this.pending.subarray(at + 1);
      if (this.fields.length === 3) {
        const [id, code, text] = this.fields as [string, string, string];
        this.fields = [];
        this.onAnswer(Number(id), { code: /^\d+$/.test(code) ? Number(code) : -1, text: text.trim() });
      }
    }
  }
}
