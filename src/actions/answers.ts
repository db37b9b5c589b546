import { homedir } from 'node:os';
import { killedBySignal } from '../answer/signals.js';
import { SandboxError } from '../errors.js';
import type { ReadFileResult } from '../files/container-files.js';
import type { ExecResult } from '../commands/exec-types.js';
import type { SandboxManager } from '../sandbox/sandbox-manager.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import type { ImageChoice } from '../images/golden-images.js';

/**
 * Answers every host gives in the same words: the line a person reads for one command, the
 * error for a container that is not this session's, the shape of a file read.
 */

/** A path as a person reads it: under the home folder as ~/... */
function shortPath(path: string): string {
  const home = homedir();
  return path.startsWith(`${home}/`) ? `~${path.slice(home.length)}` : path;
}

/** The one line the user sees (and the model reads beside the answer) for one command. */
export function commandUserText(container: string, cmd: string, r: ExecResult): string {
  const signal = killedBySignal(r)?.name;
  const flags = [
    r.timedOut && 'timed out',
    r.canceled && 'canceled',
    r.oomKilled && 'out of memory',
    r.diskLimitHit && 'disk limit',
    signal,
  ]
    .filter(Boolean)
    .join(', ');
  return `${container}$ ${cmd.length > 80 ? `${cmd.slice(0, 80)}…` : cmd} -> exit ${r.exitCode}${flags ? ` (${flags})` : ''}; log: ${shortPath(r.logPath)}`;
}

export function noSuchContainer(manager: SandboxManager, containerId: string): SandboxError {
  const live = manager.list().map((s) => s.name);
  return new SandboxError(
    'CONTAINER_NOT_FOUND',
    `No container ${JSON.stringify(containerId)} was started in this session${live.length ? `; live: ${live.join(', ')}` : '; start one with startContainer'}.`,
    { data: { containerId } },
  );
}

/** Lines with their numbers, as an editor shows them: "  12| text". */
export function numbered(r: { text: string; startLine: number; endLine: number }): string {
  const lines = r.text.split('\n');
  if (r.text.endsWith('\n')) lines.pop();
  const width = String(r.endLine).length;
  return lines.map((l, i) => `${String(r.startLine + i).padStart(width)}| ${l}`).join('\n');
}

/** readContainerFile's answer: numbered lines, or a binary file described. */
export function readFileAnswer(r: ReadFileResult): Record<string, unknown> {
  return r.binary
    ? { path: r.path, totalBytes: r.totalBytes, binary: true, note: r.note }
    : {
        path: r.path,
        startLine: r.startLine,
        endLine: r.endLine,
        totalLines: r.totalLines,
        totalBytes: r.totalBytes,
        text: numbered(r),
        ...(r.note ? { note: r.note } : {}),
      };
}

/** How a project mount is named to the user and the model. */
export function mountDescription(mount: 'ro' | 'scratch' | 'rw'): string {
  return mount === 'rw'
    ? 'WRITABLE (changes applied after each command, checked; files the host runs held back)'
    : mount === 'scratch'
      ? 'as a scratch copy (writable, every write thrown away at the end)'
      : 'read-only';
}

/** What a task's model is told of where its commands run. */
export function taskEnvironment(image: string, sandbox: Sandbox, network: string): string {
  const mounted = sandbox.info.project;
  const project = mounted
    ? `the user's project ${mountDescription(mounted.mount).toLowerCase()} at ${mounted.containerRoot}`
    : 'no project mounted';
  return `image ${image}; working directory ${sandbox.info.workdir}; ${project}; network ${network}; /bin/sh; memory ${Math.round(sandbox.info.memoryBytes / 1024 ** 2)} MiB`;
}

/** startContainer's answer and the line a person reads; `lifetime` says when the container goes, in the host's terms. */
export function startAnswer(
  sandbox: Sandbox,
  choice: ImageChoice,
  lifetime: string,
): { answer: Record<string, unknown>; userText: string } {
  const mounted = sandbox.info.project;
  const where = mounted
    ? `${mounted.mount === 'rw' ? 'writable' : mounted.mount === 'scratch' ? 'scratch (writes thrown away)' : 'read-only'} at ${mounted.containerRoot}`
    : undefined;
  return {
    answer: {
      id: sandbox.id.slice(0, 12),
      name: sandbox.name,
      status: 'running',
      image: choice.image,
      ...(choice.language ? { language: choice.language } : {}),
      ...(choice.note ? { note: choice.note } : {}),
      expiresAt: sandbox.info.expiresAt.toISOString(),
      lifetime,
      ...(where ? { project: where } : {}),
      ...(sandbox.info.ports ? { ports: sandbox.info.ports } : {}),
    },
    userText: `Started container ${sandbox.name} from ${choice.image}${choice.language ? ` (${choice.language})` : ''}${where ? ` with the project ${where}` : ''}.${choice.note ? ` Note: ${choice.note}.` : ''}`,
  };
}
