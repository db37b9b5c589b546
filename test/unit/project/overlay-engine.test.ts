import { jest } from '@jest/globals';
import type { ContainerEngine, EngineInfo } from '../../../src/engine/container-engine.js';
import { checkOverlayEngine } from '../../../src/project/project-mount.js';
import { sandboxError } from '../../support/sandbox-error.js';

/** Just enough of an engine for the overlay check: where it is and which it is. */
function engineOf(kind: EngineInfo['kind'], rootless = false): ContainerEngine {
  return {
    connection: { kind: 'socket', socketPath: '/run/e.sock', endpoint: 'unix:///run/e.sock' },
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

describe('a writable or scratch project on an engine without overlays', () => {
  test.each(['rw', 'scratch'] as const)(
    "rootless Podman: '%s' is refused with why (its own user namespace mounts the volume)",
    async (mount) => {
      const e = await sandboxError(() => checkOverlayEngine(engineOf('podman', true), mount));
      expect(e.code).toBe('POLICY_VIOLATION');
      expect(e.message).toBe(
        `A '${mount}' project mount needs an overlay of the project, and the engine is a rootless Podman, which mounts volumes in its own user namespace ` +
          "(only rootful Podman is supported for this): mount it read-only ('ro') instead.",
      );
      expect(e.data).toMatchObject({ rule: 'projectMount' });
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
