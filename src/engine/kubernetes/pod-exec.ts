import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import { SandboxError } from '../../errors.js';
import { swallowed } from '../../debug.js';
import type { ExecInput, ExecSession, ExecSpec, StreamId } from '../container-engine.js';

/**
 * One command in a pod over the API server's exec WebSocket, protocol v5.channel.k8s.io:
 * each message is a channel byte then data (0 stdin, 1 stdout, 2 stderr, 3 the v1.Status that
 * carries the exit code, 255 "close this channel"). v5 is the first version with that last
 * one, which is what lets stdin end while the connection stays open for the exit status; on
 * v4 the only way to end stdin is to close the socket, and the status is lost with it.
 */

export const EXEC_PROTOCOL = 'v5.channel.k8s.io';
const CHANNEL = { stdin: 0, stdout: 1, stderr: 2, status: 3, close: 255 } as const;
/** Stdin goes in messages of at most this size: one huge message would be held whole by every proxy on the way. */
const STDIN_CHUNK = 256 * 1024;

export interface ExecTarget {
  /** wss://host:port/api/v1/namespaces/<ns>/pods/<name>/exec, without the query. */
  url: string;
  /** TLS material and headers for the API server (KubeConfig.applyToHTTPSOptions). */
  options: WebSocket.ClientOptions;
  container: string;
}

/** The exit code in the exec's v1.Status: 0 for Success, the NonZeroExitCode cause's number, else null. */
export function exitCodeOfStatus(status: unknown): number | null {
  if (typeof status !== 'object' || status === null) return null;
  const s = status as { status?: string; reason?: string; details?: { causes?: Array<{ reason?: string; message?: string }> } };
  if (s.status === 'Success') return 0;
  if (s.reason !== 'NonZeroExitCode') return null;
  const cause = s.details?.causes?.find((c) => c.reason === 'ExitCode');
  const code = Number(cause?.message);
  return Number.isInteger(code) ? code : null;
}

/**
 * The command line the pod runs: an exec on Kubernetes has neither environment nor working
 * folder of its own, so `env` and a `cd` in front say them. (Nor a user: every exec runs as
 * the pod's user, which is what the sandbox's own helpers want anyway.)
 */
export function podCommand(spec: ExecSpec): string[] {
  let cmd = spec.cmd;
  if (spec.workdir !== undefined) cmd = ['/bin/sh', '-c', 'cd -- "$0" || exit 126; exec "$@"', spec.workdir, ...cmd];
  if (spec.env?.length) cmd = ['env', ...spec.env, ...cmd];
  return cmd;
}

function send(ws: WebSocket, data: Buffer): Promise<void> {
  return new Promise((resolve, reject) => ws.send(data, { binary: true }, (e) => (e ? reject(e) : resolve())));
}

/** Writes stdin as channel-0 messages (each waited for: the socket's buffer stays small), then closes the channel. */
async function writeStdin(ws: WebSocket, input: ExecInput): Promise<void> {
  const chunks: AsyncIterable<Buffer> | Buffer[] = Buffer.isBuffer(input) ? [input] : input;
  for await (const chunk of chunks) {
    for (let at = 0; at < chunk.length; at += STDIN_CHUNK) {
      const part = chunk.subarray(at, at + STDIN_CHUNK);
      await send(ws, Buffer.concat([Buffer.of(CHANNEL.stdin), part]));
    }
  }
  await send(ws, Buffer.of(CHANNEL.close, CHANNEL.stdin));
}

/**
 * Starts `spec` in the pod. Resolves once the connection is open and the protocol agreed.
 * @throws SandboxError CONTAINER_NOT_FOUND (no such pod, or not running), ENGINE_UNAVAILABLE, ENGINE_ERROR
 */
export function podExec(target: ExecTarget, spec: ExecSpec, onOutput: (stream: StreamId, chunk: Buffer) => void): Promise<ExecSession> {
  const query = new URLSearchParams({ container: target.container, stdout: 'true', stderr: 'true' });
  if (spec.stdin !== undefined) query.set('stdin', 'true');
  for (const arg of podCommand(spec)) query.append('command', arg);
  const ws = new WebSocket(`${target.url}?${query.toString()}`, [EXEC_PROTOCOL], { ...target.options, perMessageDeflate: false });

  let exitCode: number | null = null;
  let finish!: (r: { exitCode: number | null }) => void;
  const done = new Promise<{ exitCode: number | null }>((resolve) => (finish = resolve));
  let detached = false;

  ws.on('message', (data: Buffer, isBinary: boolean) => {
    if (detached || !isBinary || data.length === 0) return;
    const channel = data[0];
    if (channel === CHANNEL.stdout || channel === CHANNEL.stderr) {
      if (data.length > 1) onOutput(channel === CHANNEL.stdout ? 'stdout' : 'stderr', data.subarray(1));
    } else if (channel === CHANNEL.status) {
      try {
        exitCode = exitCodeOfStatus(JSON.parse(data.subarray(1).toString('utf8')));
      } catch (e) {
        swallowed('an exec status that is not JSON', e);
      }
    }
  });
  ws.on('close', () => finish({ exitCode }));

  return new Promise<ExecSession>((resolve, reject) => {
    ws.once('upgrade', (res: IncomingMessage) => {
      // A helper nobody waits on must not keep the process alive.
      if (spec.background) res.socket.unref();
    });
    ws.once('unexpected-response', (_req, res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        ws.terminate();
        const body = Buffer.concat(chunks).toString('utf8').slice(0, 2000);
        let message = body;
        try {
          message = (JSON.parse(body) as { message?: string }).message ?? body;
        } catch {
          // not a v1.Status: the body as it is
        }
        // 400 is what the API server answers for a pod that exists but is not running.
        reject(
          status === 404 || (status === 400 && /not running|completed|terminated|not found/i.test(message))
            ? new SandboxError('CONTAINER_NOT_FOUND', `The pod is gone or not running: ${message}`, {
                data: { containerId: podOf(target.url) },
              })
            : new SandboxError('ENGINE_ERROR', `Exec: the API server answered ${status}: ${message}`, { data: { status } }),
        );
      });
    });
    ws.once('error', (e: NodeJS.ErrnoException) => {
      reject(
        new SandboxError('ENGINE_UNAVAILABLE', `The Kubernetes API server could not be reached for an exec (${e.code ?? e.message}).`, {
          cause: e,
        }),
      );
    });
    ws.once('open', () => {
      if (ws.protocol !== EXEC_PROTOCOL && spec.stdin !== undefined) {
        ws.terminate();
        reject(
          new SandboxError(
            'ENGINE_ERROR',
            `The API server speaks exec protocol ${JSON.stringify(ws.protocol)}, not ${EXEC_PROTOCOL}: a command's input could not end without losing its exit status. Kubernetes 1.30 or later speaks it.`,
          ),
        );
        return;
      }
      ws.on('error', (e) => swallowed('an exec connection failed', e));
      if (spec.stdin !== undefined) {
        writeStdin(ws, spec.stdin).catch((e: unknown) => {
          // The command ended before reading all its input: its output and status still count.
          swallowed('writing an exec stdin', e);
        });
      }
      resolve({
        done,
        detach: () => {
          detached = true;
          ws.terminate();
        },
      });
    });
  });
}

/** The pod an exec URL names (`.../pods/<name>/exec`): the id the port knows the container by. */
function podOf(url: string): string {
  return decodeURIComponent(/\/pods\/([^/?]+)\/exec/.exec(url)?.[1] ?? '');
}
