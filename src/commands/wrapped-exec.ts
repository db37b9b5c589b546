import type { ContainerEngine, ExecInput, ExecSession, StreamId } from '../engine/container-engine.js';
import { wrapCommand } from './wrapper-protocol.js';

/** How a wrapped command is started: its marker, its folder, and what it gets on stdin. */
export interface WrappedExecOptions {
  /** Its mark (exec-marks.ts), `GENAICODE_DOCKER_EXEC=<rss kB>:<cpu s>`: the wrapper lowers its limits to it first. */
  execMark: string;
  workdir: string;
  env?: Record<string, string>;
  /** Bytes then end of input, or a stream kept open (a background process). */
  stdin?: ExecInput;
  /** Its connection does not keep this process alive (a background process). */
  background?: boolean;
}

/**
 * Starts `command` inside the wrapper (wrapper-protocol.ts) in an exec of its own: the one
 * way a command runs outside the kept shell, a plain one as a background process.
 */
export function startWrappedExec(
  engine: ContainerEngine,
  containerId: string,
  command: string | readonly string[],
  o: WrappedExecOptions,
  onOutput: (stream: StreamId, data: Buffer) => void,
): Promise<ExecSession> {
  const env = [o.execMark, ...Object.entries(o.env ?? {}).map(([k, v]) => `${k}=${v}`)];
  return engine.exec(
    containerId,
    {
      cmd: wrapCommand(command),
      env,
      workdir: o.workdir,
      ...(o.stdin !== undefined ? { stdin: o.stdin } : {}),
      ...(o.background ? { background: true } : {}),
    },
    onOutput,
  );
}
