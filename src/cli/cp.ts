import { readFileSync, writeFileSync } from 'node:fs';
import type { Config } from '../config/config-schema.js';
import { DockerEngine } from '../engine/docker-engine.js';
import { isGone } from '../engine/container-gone.js';
import { SandboxError } from '../errors.js';
import { ContainerFiles } from '../files/container-files.js';
import { LABEL } from '../sandbox/labels.js';
import { reportFailure } from './format.js';

/** `NAME:PATH` (a container side) or a host path. A host path with a colon is written ./a:b. */
function side(arg: string): { container: string; path: string } | { host: string } {
  const m = /^([a-zA-Z0-9][a-zA-Z0-9_.-]*):(.*)$/.exec(arg);
  return m && !arg.startsWith('./') && !arg.startsWith('/') ? { container: m[1]!, path: m[2] || '.' } : { host: arg };
}

/**
 * Copies one file between the host and a running managed container, in either direction,
 * with the rules of the file actions: a path in the container is inside its working folder,
 * checked against its real file system (no `..` or symlink out), the bytes exact.
 * Returns the exit code (0 copied; 1 refused or failed).
 */
export async function cp(
  config: Config,
  from: string,
  to: string,
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<number> {
  const a = side(from);
  const b = side(to);
  try {
    if ('container' in a === 'container' in b)
      throw new SandboxError(
        'INVALID_ARGUMENT',
        'Give one container side (NAME:PATH) and one host path: cp HOSTPATH NAME:PATH, or cp NAME:PATH HOSTPATH.',
      );
    const remote = 'container' in a ? a : (b as { container: string; path: string });
    const engine = new DockerEngine(config.engine);
    const state = await engine.inspectContainer(remote.container);
    if (!state || isGone(state) || state.labels[LABEL.managed] !== 'true')
      throw new SandboxError(
        'CONTAINER_NOT_FOUND',
        `No running container named ${JSON.stringify(remote.container)} managed by genaicode-docker (see docker ps --filter label=${LABEL.managed}=true).`,
        { data: { containerId: remote.container } },
      );
    const files = new ContainerFiles(engine, state.id, state.workdir ?? config.workdir, config.files);
    if ('container' in a) {
      const bytes = await files.readFileBytes(a.path);
      writeFileSync((b as { host: string }).host, bytes);
      out(`copied ${bytes.length} bytes from ${remote.container}:${a.path} to ${(b as { host: string }).host}`);
    } else {
      const r = await files.writeFile(remote.path, readFileSync(a.host));
      out(`copied ${r.bytesWritten} bytes to ${remote.container}:${r.path}${r.created ? ' (new)' : ''}`);
    }
    return 0;
  } catch (e) {
    const hostCode = (e as NodeJS.ErrnoException).code;
    if (!(e instanceof SandboxError) && hostCode) {
      const what = hostCode === 'EISDIR' ? 'is a folder (cp copies one file)' : hostCode === 'ENOENT' ? 'does not exist' : hostCode;
      err(`the host path ${(e as NodeJS.ErrnoException).path ?? ''} ${what}`);
      return 1;
    }
    reportFailure(e, false, out, err);
    return 1;
  }
}
