import { once } from 'node:events';
import net from 'node:net';
import tls from 'node:tls';
import type { ExecInput } from './container-engine.js';

/**
 * Starting an exec and reading its output over a connection of our own, not through
 * dockerode's `exec.start({ hijack: true })`.
 *
 * Why: for unix sockets and plain TCP, Node can read a socket into one reused buffer
 * (`net.connect({ onread })`) instead of allocating a Buffer and emitting a 'data' event
 * per read. On a 1 GiB output that cuts this process's CPU from about 2 s to about 0.3 s
 * of user time, level with the Go docker CLI (bench/README.md, target 2). TLS connections
 * cannot read that way and use 'data' events over the same protocol code.
 *
 * Why not node:http's upgrade support: `onread` can only be given when a socket is created,
 * and the http client reads the response through 'data' events, which such a socket does
 * not emit. So the one request and the response head are handled here; the head is short
 * and fixed in form (status line, headers, blank line), and any error answer is read whole.
 *
 * The protocol (Docker Engine API, "hijacking"): `POST /exec/{id}/start` with
 * `Connection: Upgrade` and `Upgrade: tcp`; the engine answers `101 UPGRADED` (or, from
 * engines that ignore the upgrade, `200 OK`) and the connection then carries the raw
 * multiplexed stream until the process ends. Any other status is an error, with a JSON
 * body `{ "message": ... }`. With `stdin`, the exec was created with AttachStdin: the bytes
 * are written once the stream is live (a stream's as it gives them), and the write half
 * closed (the command sees EOF).
 */

/** How to open a connection to the engine. */
export type EngineTransport =
  { kind: 'net'; options: net.NetConnectOpts; hostHeader: string } | { kind: 'tls'; options: tls.ConnectionOptions; hostHeader: string };

/** The engine refused to start the exec: its HTTP status and message. */
export class ExecStartError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
    this.name = 'ExecStartError';
  }
}

export interface ExecStream {
  /** Settles when the output has ended (the process exited, or the connection closed). */
  ended: Promise<void>;
  /** Stops reading and closes the connection. */
  destroy(): void;
}

/** Bytes of output read per system call at most (and the one buffer they are read into). */
const READ_BUFFER_BYTES = 256 * 1024;
/** How long the engine may take to answer the start of a command (it answers at once). */
const ANSWER_TIMEOUT_MS = 60_000;
/** A response head longer than this is not the engine's. */
const MAX_HEAD_BYTES = 64 * 1024;
/** An error body longer than this is cut (the message is what matters). */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

/**
 * Starts exec `execId` and passes its raw output to `onBytes` as it is read.
 * `buf` is a reused read buffer: the bytes `buf[start, end)` are valid only during the call.
 * Resolves once the engine has accepted the start (the stream is then live).
 * @throws ExecStartError when the engine answers with an error status; a socket error
 * (with its `code`, e.g. ECONNREFUSED) when the engine cannot be reached.
 */
export function openExecStream(
  transport: EngineTransport,
  execId: string,
  onBytes: (buf: Buffer, start: number, end: number) => void,
  options: { answerTimeoutMs?: number; stdin?: ExecInput; background?: boolean } = {},
): Promise<ExecStream> {
  const answerTimeoutMs = options.answerTimeoutMs ?? ANSWER_TIMEOUT_MS;
  return new Promise((resolveOpen, rejectOpen) => {
    const body = '{"Detach":false,"Tty":false}';
    const request =
      `POST /exec/${encodeURIComponent(execId)}/start HTTP/1.1\r\n` +
      `Host: ${transport.hostHeader}\r\n` +
      'User-Agent: genaicode-docker\r\n' +
      'Content-Type: application/json\r\n' +
      'Connection: Upgrade\r\n' +
      'Upgrade: tcp\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

    let phase: 'head' | 'stream' | 'error-body' | 'done' = 'head';
    let head = Buffer.alloc(0);
    let errorStatus = 0;
    let errorBody: ErrorBody | undefined;
    let resolveEnded!: () => void;
    let rejectEnded!: (e: Error) => void;
    const ended = new Promise<void>((res, rej) => {
      resolveEnded = res;
      rejectEnded = rej;
    });

    let socket: net.Socket | undefined;
    let answerTimer: NodeJS.Timeout | undefined;
    const failOpen = (e: Error) => {
      clearTimeout(answerTimer);
      if (phase === 'done') return;
      phase = 'done';
      socket?.destroy();
      rejectOpen(e);
    };

    const onRead = (buf: Buffer, start: number, end: number): void => {
      if (phase === 'stream') return onBytes(buf, start, end);
      if (phase === 'error-body') {
        if (errorBody!.push(buf.subarray(start, end))) finishError();
        return;
      }
      if (phase !== 'head') return;
      head = Buffer.concat([head, buf.subarray(start, end)]);
      const cut = head.indexOf('\r\n\r\n');
      if (cut === -1) {
        if (head.length > MAX_HEAD_BYTES)
          failOpen(new Error(`The engine's answer to starting a command has no end of headers after ${MAX_HEAD_BYTES} bytes.`));
        return;
      }
      const response = parseHead(head.toString('latin1', 0, cut));
      if (!response)
        return failOpen(
          new Error(
            `The engine answered starting a command with something that is not HTTP: ${JSON.stringify(head.toString('latin1', 0, Math.min(cut, 80)))}`,
          ),
        );
      const rest = head.subarray(cut + 4);
      head = Buffer.alloc(0);
      if (response.status === 101 || response.status === 200) {
        clearTimeout(answerTimer);
        phase = 'stream';
        resolveOpen({ ended, destroy: () => socket?.destroy() });
        if (options.stdin && socket) writeInput(socket, options.stdin);
        if (rest.length) onBytes(rest, 0, rest.length);
        return;
      }
      phase = 'error-body';
      errorStatus = response.status;
      errorBody = new ErrorBody(response.headers);
      if (errorBody.push(rest)) finishError();
    };

    const finishError = () => {
      const text = errorBody?.text() ?? '';
      let message = text.trim();
      try {
        const parsed = JSON.parse(text) as { message?: unknown };
        if (typeof parsed.message === 'string') message = parsed.message;
      } catch {
        // not JSON: the text as it came (nothing lost: the text is the message)
      }
      failOpen(new ExecStartError(errorStatus, message || `HTTP ${errorStatus}`));
    };

    let connected: net.Socket;
    try {
      if (transport.kind === 'net') {
        connected = net.connect({
          ...transport.options,
          onread: {
            buffer: Buffer.allocUnsafe(READ_BUFFER_BYTES),
            callback: (n: number, buf: Uint8Array) => {
              onRead(buf as Buffer, 0, n);
              return true;
            },
          },
        } as net.NetConnectOpts);
      } else {
        connected = tls.connect(transport.options);
        connected.on('data', (chunk: Buffer) => onRead(chunk, 0, chunk.length));
      }
    } catch (e) {
      // Bad options (a port out of range, unreadable key material) throw at once.
      return failOpen(e as Error);
    }
    socket = connected;
    if (options.background) connected.unref();
    connected.on(transport.kind === 'tls' ? 'secureConnect' : 'connect', () => connected.write(request));
    // An engine that takes the connection but never answers would hold the command forever.
    answerTimer = setTimeout(
      () => failOpen(new Error(`The engine did not answer the start of a command within ${answerTimeoutMs} ms.`)),
      answerTimeoutMs,
    );

    const onEnd = () => {
      if (phase === 'stream') {
        phase = 'done';
        resolveEnded();
      } else if (phase === 'error-body') {
        finishError();
      } else {
        failOpen(new Error('The engine closed the connection before answering the start of a command.'));
      }
    };
    connected.on('end', onEnd);
    connected.on('close', onEnd);
    connected.on('error', (e) => {
      if (phase === 'stream') {
        phase = 'done';
        rejectEnded(e);
      } else {
        failOpen(e);
      }
    });
  });
}

/**
 * Writes a command's stdin, then closes our half of the connection, which the engine passes
 * on as the end of the command's input. A stream that fails ends the input there.
 */
function writeInput(socket: net.Socket, input: ExecInput): void {
  if (Buffer.isBuffer(input)) {
    socket.end(input);
  } else {
    void (async () => {
      try {
        for await (const chunk of input) {
          if (socket.destroyed) return;
          if (!socket.write(chunk)) await Promise.race([once(socket, 'drain'), once(socket, 'close')]);
        }
      } finally {
        if (!socket.destroyed) socket.end();
      }
    })().catch(() => {
      // The connection closed under the writer: the output side reports how the command ended.
    });
  }
}

interface ResponseHead {
  status: number;
  headers: Map<string, string>;
}

function parseHead(text: string): ResponseHead | undefined {
  const [statusLine, ...lines] = text.split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '');
  if (!m) return undefined;
  const headers = new Map<string, string>();
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return { status: Number(m[1]), headers };
}

/** The body of an error answer: by Content-Length, chunked, or up to the end of the connection. */
class ErrorBody {
  private data = Buffer.alloc(0);
  private readonly length: number | undefined;
  private readonly chunked: boolean;

  constructor(headers: Map<string, string>) {
    const length = headers.get('content-length');
    this.length = length !== undefined && /^\d+$/.test(length) ? Math.min(Number(length), MAX_ERROR_BODY_BYTES) : undefined;
    this.chunked = /chunked/i.test(headers.get('transfer-encoding') ?? '');
  }

  /** Adds bytes; true once the body is complete. */
  push(bytes: Buffer): boolean {
    if (this.data.length < MAX_ERROR_BODY_BYTES) this.data = Buffer.concat([this.data, bytes]);
    if (this.length !== undefined) return this.data.length >= this.length;
    if (this.chunked) return this.data.includes('\r\n0\r\n\r\n') || this.data.subarray(0, 5).equals(Buffer.from('0\r\n\r\n'));
    return this.data.length >= MAX_ERROR_BODY_BYTES;
  }

  text(): string {
    if (this.length !== undefined) return this.data.toString('utf8', 0, this.length);
    if (!this.chunked) return this.data.toString('utf8');
    // chunk-size CRLF data CRLF ... 0 CRLF CRLF
    const parts: Buffer[] = [];
    let pos = 0;
    while (pos < this.data.length) {
      const eol = this.data.indexOf('\r\n', pos);
      if (eol === -1) break;
      const size = parseInt(this.data.toString('latin1', pos, eol), 16);
      if (!Number.isFinite(size) || size === 0) break;
      parts.push(this.data.subarray(eol + 2, eol + 2 + size));
      pos = eol + 2 + size + 2;
    }
    return Buffer.concat(parts).toString('utf8');
  }
}
