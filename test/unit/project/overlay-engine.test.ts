import type { ContainerEngine, EngineInfo } from '../../../src/engine/container-engine.js';
import { checkOverlayEngine } from '../../../src/project/project-mount.js';
import { sandboxError } from '../../support/sandbox-error.js';

/** Just enough of an engine for the overlay check: where it is and which it is. */
function engineOf(kind: EngineInfo['kind']): ContainerEngine {
  return {
    connection: { kind: 'socket', socketPath: '/run/e.sock', endpoint: 'unix:///run/e.sock' },
    info: () =>
      Promise.resolve({ version: '1', apiVersion: '1.40', os: 'linux/amd64', kind, cgroupVersion: '2', endpoint: 'unix:///run/e.sock' }),
  } as unknown as ContainerEngine;
}

describe('a writable or scratch project on an engine without overlays', () => {
  test.each(['rw', 'scratch'] as const)("Podman: '%s' is refused with why (its API drops the volume's driver options)", async (mount) => {
    const e = await sandboxError(() => checkOverlayEngine(engineOf('podman'), mount));
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.message).toBe(
      `A '${mount}' project mount needs an overlay of the project, and the engine is Podman, whose Docker API ignores a volume's driver options: ` +
        "there would be no overlay, and the container would not see the project: mount it read-only ('ro') instead.",
    );
    expect(e.data).toMatchObject({ rule: 'projectMount' });
  });

  test('an engine that is neither is refused as not Docker; Docker passes', async () => {
    expect((await sandboxError(() => checkOverlayEngine(engineOf('unknown'), 'rw'))).message).toMatch(/the engine is not Docker/);
    await expect(checkOverlayEngine(engineOf('docker'), 'rw')).resolves.toBeUndefined();
  });
});
