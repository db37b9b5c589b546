import type Docker from 'dockerode';
import { poll } from '../retry.js';
import type { ExecSession, ExecSpec, StreamId } from './container-engine.js';
import { containerGoneError } from './container-gone.js';
import { goneError, goneOr, type DockerContext } from './docker-context.js';
import { FrameDemuxer } from './demux.js';
import { asHttpError, containerGone, engineMessage, type EngineHttpError } from './engine-errors.js';
import { underFileSizeCap } from './rootless.js';
import { ExecStartError, openExecStream, type ExecStream } from './exec-stream.js';

/** Starts a command in a running container; its output goes to `onOutput` as it comes. */
export async function exec(
  ctx: DockerContext,
  containerId: string,
  spec: ExecSpec,
  onOutput: (stream: StreamId, chunk: Buffer) => void,
): Promise<ExecSession> {
  const gone = (err: EngineHttpError) =>
    containerGone(err)
      ? goneError(containerId, err)
      : err.statusCode === 409
        ? containerGoneError({ id: containerId }, `the engine says: ${engineMessage(err)}`)
        : undefined;
  let execution: Docker.Exec;
  try {
    execution = await ctx.docker.getContainer(containerId).exec({
      Cmd: underFileSizeCap(spec.cmd, ctx.execFileSizeCaps.get(containerId)),
      Env: spec.env,
      WorkingDir: spec.workdir,
      User: spec.user,
      AttachStdin: spec.stdin !== undefined,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
    });
  } catch (e) {
    throw gone(asHttpError(e)) ?? (await goneOr(ctx, containerId, e, () => ctx.fail(e, 'Start command')));
  }
  // Output is read over a connection of our own into one reused buffer (exec-stream.ts):
  // the demuxer hands views of it to onOutput, which must copy what it keeps.
  const demux = new FrameDemuxer(onOutput);
  let stream: ExecStream;
  try {
    stream = await openExecStream(ctx.transport, execution.id, (buf, start, end) => demux.push(buf.subarray(start, end)), {
      ...(spec.stdin ? { stdin: spec.stdin } : {}),
      ...(spec.background ? { background: true } : {}),
    });
  } catch (e) {
    if (e instanceof ExecStartError) {
      const err = { statusCode: e.statusCode, message: e.message };
      throw gone(err) ?? (await goneOr(ctx, containerId, err, () => ctx.fail(err, 'Start command')));
    }
    throw ctx.fail(e, 'Start command');
  }
  const done = stream.ended.then(
    () => execExitCode(ctx, execution),
    (e: unknown) => {
      throw ctx.fail(e, 'Read command output');
    },
  );
  return { done, detach: () => stream.destroy() };
}

/** How many times the exit code is asked for after the stream ended, at most. */
const EXIT_CODE_ATTEMPTS = 51;

/**
 * The exit code, once the engine has recorded it (it can lag the end of the stream by a
 * moment): asked again after 2, 4, ... 20 ms, up to EXIT_CODE_ATTEMPTS times; null when the
 * container went away or the engine never said.
 */
async function execExitCode(ctx: DockerContext, execution: Docker.Exec): Promise<{ exitCode: number | null }> {
  const gone = Symbol('gone');
  const code = await poll<number | typeof gone>(
    async () => {
      let info: Docker.ExecInspectInfo;
      try {
        info = await execution.inspect();
      } catch (e) {
        if (containerGone(asHttpError(e))) return gone;
        throw ctx.fail(e, 'Read exit code');
      }
      return !info.Running && info.ExitCode !== null && info.ExitCode !== undefined ? info.ExitCode : undefined;
    },
    { timeoutMs: 60_000, intervalMs: (attempt) => Math.min(2 + attempt * 2, 20), maxAttempts: EXIT_CODE_ATTEMPTS },
  );
  return { exitCode: code === undefined || code === gone ? null : code };
}
