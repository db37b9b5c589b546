/** Options of one command. */
export interface ExecOptions {
  /** Kill the command's process tree after this long. @default config.exec.timeoutMs (60000) */
  timeoutMs?: number;
  /** Aborting kills the command's process tree; the result then has `canceled: true`. */
  signal?: AbortSignal;
  /** Working directory in the container. @default the sandbox's workdir */
  workdir?: string;
  /** Extra environment variables. */
  env?: Record<string, string>;
  /** Short label for the log file name. @default the command's first word */
  label?: string;
  /**
   * The command's standard input, then end of input: how a program's text reaches the
   * container without passing through a command line. Without it, stdin is empty.
   */
  stdin?: string | Buffer;
  /** Run it as a background process (Sandbox.exec then answers with its handle at once). */
  background?: boolean;
  /** Wait this long for its end, then hand it to the background processes and answer with its handle. */
  yieldMs?: number;
}

/**
 * What a command did. A non-zero exit is a result, not an error; every flag is present
 * on every result. `stdout`/`stderr` are capped at capture time (head and tail kept, a
 * marker in between); `logPath` holds every byte.
 */
export interface ExecResult {
  command: string;
  /** The command's exit code; 124 when it timed out, 137 when canceled. */
  exitCode: number;
  stdout: string;
  stderr: string;
  /** Some output is not in stdout/stderr (only in the log). */
  truncated: boolean;
  timedOut: boolean;
  canceled: boolean;
  /** Killed by the memory limit. */
  oomKilled: boolean;
  /** The process limit refused at least one fork while the command ran. */
  pidsLimitHit: boolean;
  /** The container's own files passed limits.disk: the command was stopped (exit 137). */
  diskLimitHit: boolean;
  /** Why the command ended, when we know more than its exit code says. */
  reason?: string;
  bytes: { stdout: number; stderr: number };
  lines: { stdout: number; stderr: number };
  durationMs: number;
  /** Absolute path of the full log (stdout and stderr bytes, in arrival order). */
  logPath: string;
  /**
   * With a writable project: what the command changed that was not applied to the project
   * (files the host runs, held back; links out, FIFOs, devices, never made; set-id bits dropped), one line each.
   */
  projectNotApplied?: string[];
  /** The kept shell's folder after the command, when the command changed it. */
  folder?: string;
  /** What of the kept shell's state (folder, exported variables) was lost, in a sentence. */
  shell?: string;
  /** The log does not hold every byte (a cap of `logs.*`, or a disk short of space): what it lost, in a sentence. */
  logCut?: string;
}
