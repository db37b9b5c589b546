import { jest } from '@jest/globals';
import { engineReach, limitsLine } from '../../../src/cli/doctor.js';
import { loadConfig } from '../../../src/config/load-config.js';

describe('doctor says how the engine is reached and what that allows', () => {
  test('a remote engine over TLS: its certificates, and host folders refused', () => {
    const line = engineReach(
      { kind: 'tcp', host: 'build', port: 2376, protocol: 'https', certPath: '/certs', endpoint: 'tcp://build:2376' },
      'docker',
    );
    expect(line).toBe(
      "remote engine (TLS, certificates from /certs): project and host mounts are refused (its paths are its own machine's); files go in through the file actions",
    );
  });

  test('an ssh:// engine: through OpenSSH, the ssh command, the remote socket, host folders refused', () => {
    const line = engineReach(
      { kind: 'ssh', host: 'build', user: 'me', port: 2222, remoteSocket: '/var/run/docker.sock', endpoint: 'ssh://me@build:2222' },
      'docker',
    );
    expect(line).toMatch(/^remote engine \(through OpenSSH: `ssh -p 2222 me@build` forwards its socket \/var\/run\/docker\.sock/);
    expect(line).toMatch(/known_hosts/);
    expect(line).toMatch(/project and host mounts are refused/);
  });

  test('a remote engine over plain HTTP is named as such', () => {
    const line = engineReach({ kind: 'tcp', host: 'build', port: 2375, protocol: 'http', endpoint: 'tcp://build:2375' }, 'docker');
    expect(line).toMatch(/^remote engine \(plain HTTP, no TLS: anyone who reaches the port drives the engine\)/);
    expect(line).toMatch(/project and host mounts are refused/);
  });

  test('a local socket: Docker allows every project mount, Podman all as root, ro only otherwise', () => {
    const socket = { kind: 'socket' as const, socketPath: '/run/podman/podman.sock', endpoint: 'unix:///run/podman/podman.sock' };
    expect(engineReach(socket, 'docker')).toBe('local engine on the socket /run/podman/podman.sock: every project mount works');
    const uid = jest.spyOn(process, 'getuid');
    try {
      uid.mockReturnValue(0);
      expect(engineReach(socket, 'podman')).toMatch(
        /\(Podman\): every project mount works \('rw' and 'scratch' through a named overlay volume/,
      );
      uid.mockReturnValue(1000);
      expect(engineReach(socket, 'podman')).toMatch(
        /\(Podman\): 'ro' project mounts work; 'rw' and 'scratch' need this process to run as root/,
      );
    } finally {
      uid.mockRestore();
    }
  });

  test('a socket path with control characters is shown safely', () => {
    const line = engineReach({ kind: 'socket', socketPath: '/tmp/x\nengine ok: fake', endpoint: 'unix:///tmp/x' }, 'docker');
    expect(line).not.toContain('\n');
  });
});

describe('doctor on a rootless engine', () => {
  const socket = { kind: 'socket' as const, socketPath: '/run/p.sock', endpoint: 'unix:///run/p.sock' };

  test('rootless Podman on cgroups v2: keep-id, and the Podman mount rules', () => {
    expect(engineReach(socket, 'podman', { rootless: true, cgroupVersion: '2' })).toBe(
      "local engine on the socket /run/p.sock (rootless Podman): containers get keep-id (the engine's user is the same uid inside, where 'rw' and 'scratch' projects run; other containers run as their image's user); every project mount works, 'rw' and 'scratch' for the engine's own user",
    );
  });

  test("any rootless engine on cgroups v1: every start is refused, and why; with the operator's setting, said to run without limits", () => {
    for (const kind of ['podman', 'docker'] as const) {
      expect(engineReach(socket, kind, { rootless: true, cgroupVersion: '1' })).toBe(
        'local engine on the socket /run/p.sock, rootless on cgroups v1: it cannot enforce memory, CPU and process limits there, so every start is refused (use cgroups v2 or a rootful engine, or accept that with engine.rootlessWithoutLimits)',
      );
      expect(engineReach(socket, kind, { rootless: true, cgroupVersion: '1' }, true)).toMatch(
        /^local engine on the socket \/run\/p\.sock, rootless on cgroups v1: containers start WITHOUT memory, CPU and process limits \(engine\.rootlessWithoutLimits\)/,
      );
    }
    expect(engineReach(socket, 'podman', { rootless: false, cgroupVersion: '1' })).toMatch(/\(Podman\): (every|'ro') project mount/);
  });
});

describe("doctor's limits line", () => {
  const config = loadConfig({ cwd: '/', env: {} });
  test('says when memory, cpus and pids are configured but not enforced (rootless on cgroups v1, accepted by the operator)', () => {
    expect(limitsLine(config, true)).toMatch(
      /^limits {7}memory .*, cpus \d+, pids \d+, .* \(memory, cpus and pids NOT enforced on this engine: rootless on cgroups v1, engine\.rootlessWithoutLimits\)$/,
    );
    expect(limitsLine(config, false)).not.toMatch(/NOT enforced/);
  });
});
