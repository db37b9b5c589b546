import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { SandboxError } from '../errors.js';
import { isWithin, realPathOf } from '../paths.js';

/** Where logs go unless configured: the user's state folder (XDG), outside every project. */
export function defaultLogsDir(env: NodeJS.ProcessEnv = process.env): string {
  const state = env.XDG_STATE_HOME && isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : join(homedir(), '.local', 'state');
  return join(state, 'genaicode-docker', 'logs');
}

/**
 * A logs folder is pruned of old sessions, so it must never be (or hold) a folder of the
 * user's: not the project root or any folder above it, not the home folder or above, not /.
 * A checked-in .genaicode-docker.json is read from whatever repository GenAIcode opens.
 * @throws SandboxError INVALID_CONFIG naming the source that set it.
 */
export function checkLogsDir(logsDir: string, projectRoot: string, source: string, writableMounts: string[]): void {
  const real = realPathOf(logsDir);
  // Lexically or really inside a folder a container may write: a link on the way there
  // could be turned by that container to point anywhere.
  for (const mount of writableMounts) {
    for (const m of new Set([mount, realPathOf(mount)])) {
      if (isWithin(logsDir, m) || isWithin(real, m) || isWithin(m, real)) {
        throw new SandboxError(
          'INVALID_CONFIG',
          `Invalid configuration: ${source}: logs.dir ${JSON.stringify(logsDir)} and the writable mountAllow entry ${m} overlap; a container with that folder mounted could reach the logs. Put the logs elsewhere.`,
          { data: { field: 'logs.dir' } },
        );
      }
    }
  }
  const guarded: Array<[string, string]> = [
    [realPathOf(projectRoot), 'the project root'],
    [realPathOf(homedir()), 'the home folder'],
    ['/', 'the root folder'],
  ];
  for (const [path, what] of guarded) {
    if (isWithin(path, real)) {
      throw new SandboxError(
        'INVALID_CONFIG',
        `Invalid configuration: ${source}: logs.dir ${JSON.stringify(logsDir)} ${real === path ? 'is' : 'contains'} ${what} (${path}); old logs are deleted from that folder, so it must be a folder of its own, e.g. ${defaultLogsDir()}.`,
        { data: { field: 'logs.dir' } },
      );
    }
  }
}
