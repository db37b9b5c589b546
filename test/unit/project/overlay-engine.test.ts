import { jest } from '@jest/globals';
import type { ContainerEngine, EngineInfo } from '../../../src/engine/container-engine.js';
import { checkOverlayEngine } from '../../../src/project/project-mount.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sandboxError } from '../../support/sandbox-error.js';
import { removeTempDirs, tempDir } from '../../support/temp-dirs.js';

/** Just enough of an engine for the overlay check: where it is and which it is. */
function engineOf(kind: EngineInfo['kind'], rootless = false, socketPath = '/run/e.sock'): ContainerEngine {
  return {
    connection: { kind: 'socket', socketPath, endpoint: `unix://${socketPath}` },
    info: () =>
      Promise.resolve({
        version: '1',
        apiVersion: '1.40',
        os: 'linux/amd64',
        kind,
        cgroupVersion: '2',
        rootless,
        endpoint: 'unix:///run/e.sock',
      }),
  } as unknown as ContainerEngine;
}

afterAll(() => removeTempDirs());

describe('a writable or scratch project on an engine without overlays', () => {
  test.each(['rw', 'scratch'] as const)(
    "rootless Podman: '%s' is refused where the engine's user is not this process's, or cannot be told, with why",
    async (mount) => {
      const socket = join(tempDir('gcd-sock-'), 'podman.sock');
      writeFileSync(socket, ''); // its owner is this process's uid, as a rootless service's socket is its user's
      const me = process.getuid!();
      const uid = jest.spyOn(process, 'getuid').mockReturnValue(me + 1);
      try {
        const e = await sandboxError(() => checkOverlayEngine(engineOf('podman', true, socket), mount));
        expect(e.code).toBe('POLICY_VIOLATION');
        expect(e.message).toBe(
          `A '${mount}' project mount needs an overlay of the project, and the engine is a rootless Podman run by uid ${me}, and this process runs as uid ${me + 1}: ` +
            "it mounts the overlay as its own user, who must be the one running this: mount it read-only ('ro') instead.",
        );
        expect(e.data).toMatchObject({ rule: 'projectMount' });
      } finally {
        uid.mockRestore();
      }
      const unknown = await sandboxError(() => checkOverlayEngine(engineOf('podman', true, join(socket, 'none')), mount));
      expect(unknown.message).toContain('run by a user this process cannot tell (its socket cannot be read)');
      // The engine's user is this process's: the overlay is made (podman-overlays.ts primes it).
      await expect(checkOverlayEngine(engineOf('podman', true, socket), mount)).resolves.toBeUndefined();
    },
  );

  test('an engine that is neither Docker nor Podman is refused; Docker passes, and a rootful Podman for a process running as root', async () => {
    expect((await sandboxError(() => checkOverlayEngine(engineOf('unknown'), 'rw'))).message).toMatch(/neither Docker nor Podman/);
    const uid = jest.spyOn(process, 'getuid');
    try {
      for (const u of [0, 1000]) {
        uid.mockReturnValue(u);
        await expect(checkOverlayEngine(engineOf('docker'), 'rw')).resolves.toBeUndefined();
      }
      uid.mockReturnValue(0);
      await expect(checkOverlayEngine(engineOf('podman'), 'scratch')).resolves.toBeUndefined();
      uid.mockReturnValue(1000);
      const e = await sandboxError(() => checkOverlayEngine(engineOf('podman'), 'rw'));
      expect(e.message).toBe(
        "A 'rw' project mount needs an overlay of the project, and the engine is Podman, which gives the overlay's upper folder to root, " +
          "and this process does not run as root (it could not clean up what the container wrote): mount it read-only ('ro') instead.",
      );
      expect(e.data).toMatchObject({ rule: 'projectMount' });
    } finally {
      uid.mockRestore();
    }
  });
});
