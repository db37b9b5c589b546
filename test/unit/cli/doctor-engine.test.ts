import { engineReach } from '../../../src/cli/doctor.js';

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

  test('a remote engine over plain HTTP is named as such', () => {
    const line = engineReach({ kind: 'tcp', host: 'build', port: 2375, protocol: 'http', endpoint: 'tcp://build:2375' }, 'docker');
    expect(line).toMatch(/^remote engine \(plain HTTP, no TLS: anyone who reaches the port drives the engine\)/);
    expect(line).toMatch(/project and host mounts are refused/);
  });

  test('a local socket: Docker allows every project mount, Podman ro only', () => {
    const socket = { kind: 'socket' as const, socketPath: '/run/podman/podman.sock', endpoint: 'unix:///run/podman/podman.sock' };
    expect(engineReach(socket, 'docker')).toBe('local engine on the socket /run/podman/podman.sock: every project mount works');
    expect(engineReach(socket, 'podman')).toMatch(/\(Podman\): 'ro' project mounts work; 'rw' and 'scratch' .* refused/);
  });

  test('a socket path with control characters is shown safely', () => {
    const line = engineReach({ kind: 'socket', socketPath: '/tmp/x\nengine ok: fake', endpoint: 'unix:///tmp/x' }, 'docker');
    expect(line).not.toContain('\n');
  });
});
