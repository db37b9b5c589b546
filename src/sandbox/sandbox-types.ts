import type { ContainerEngine } from '../engine/container-engine.js';
import type { LogStore } from '../capture/log-store.js';
import type { FileLimits } from '../files/container-files.js';
import type { Clock } from '../retry.js';

/** One started container as the sandbox knows it. */
export interface SandboxInfo {
  id: string;
  name: string;
  image: string;
  sessionId: string;
  workdir: string;
  createdAt: Date;
  expiresAt: Date;
  memoryBytes: number;
  pidsLimit: number;
  /** The container user's numeric ids, when the host chose them (`uid:gid`). */
  userIds?: { uid: number; gid: number };
  /** The project, when it is mounted: its host folder, where it is in the container, and how. */
  project?: { hostRoot: string; containerRoot: string; mount: 'ro' | 'scratch' | 'rw' };
  /** Published ports (config publishPorts): a container port and the host address that reaches it, `127.0.0.1:<port>`. */
  ports?: Record<string, string>;
}

/** What a sandbox is given by its manager; `S` is the sandbox (its stop is reported with it). */
export interface SandboxDeps<S> {
  engine: ContainerEngine;
  logs: LogStore;
  /** `keptShell`: commands in one long-lived shell (config exec.keptShell, on by default there). */
  exec: { timeoutMs: number; maxBytes: number; maxLines: number; keptShell?: boolean; maxProcesses?: number };
  /** The writable layer's limit; `measured` where the engine cannot enforce it (no quota). */
  disk: { limitBytes: number; measured: boolean };
  onStopped: (sandbox: S) => void;
  files: FileLimits;
  /** With a writable or scratch project: the overlay's folders (project-overlay.ts). */
  overlay?: { dir: string; upper: string };
  /** What the waits (an idle sandbox, a second look at a stopped one, a kill's retries) wait on. @default systemClock */
  clock?: Clock;
}
