import { homedir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_SOCKET_PATH, resolveConnection } from '../../../src/engine/connection.js';
import { syncSandboxError } from '../helpers.js';

describe('resolveConnection', () => {
  test('no settings, no DOCKER_HOST: the default socket', () => {
    expect(resolveConnection({}, {})).toEqual({
      kind: 'socket',
      socketPath: DEFAULT_SOCKET_PATH,
      endpoint: `unix://${DEFAULT_SOCKET_PATH}`,
    });
  });

  test('DOCKER_HOST unix://', () => {
    expect(resolveConnection({}, { DOCKER_HOST: 'unix:///run/user/1000/docker.sock' })).toEqual({
      kind: 'socket',
      socketPath: '/run/user/1000/docker.sock',
      endpoint: 'unix:///run/user/1000/docker.sock',
    });
  });

  test('DOCKER_HOST tcp:// without TLS: http on 2375 by default, the given port otherwise', () => {
    expect(resolveConnection({}, { DOCKER_HOST: 'tcp://10.0.0.5' })).toEqual({
      kind: 'tcp',
      host: '10.0.0.5',
      port: 2375,
      protocol: 'http',
      endpoint: 'tcp://10.0.0.5',
    });
    expect(resolveConnection({}, { DOCKER_HOST: 'tcp://engine.local:12375' })).toEqual({
      kind: 'tcp',
      host: 'engine.local',
      port: 12375,
      protocol: 'http',
      endpoint: 'tcp://engine.local:12375',
    });
  });

  test('DOCKER_HOST tcp:// with DOCKER_TLS_VERIFY: https on 2376 with the cert path', () => {
    expect(resolveConnection({}, { DOCKER_HOST: 'tcp://10.0.0.5', DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: '/certs' })).toEqual({
      kind: 'tcp',
      host: '10.0.0.5',
      port: 2376,
      protocol: 'https',
      certPath: '/certs',
      endpoint: 'tcp://10.0.0.5',
    });
    const noCertPath = resolveConnection({}, { DOCKER_HOST: 'tcp://10.0.0.5:2376', DOCKER_TLS_VERIFY: '1' });
    expect(noCertPath).toMatchObject({ kind: 'tcp', protocol: 'https', port: 2376, certPath: join(homedir(), '.docker') });
  });

  test('the configured host beats DOCKER_HOST', () => {
    const c = resolveConnection({ host: 'unix:///srv/podman.sock' }, { DOCKER_HOST: 'tcp://10.0.0.5:2375' });
    expect(c).toEqual({ kind: 'socket', socketPath: '/srv/podman.sock', endpoint: 'unix:///srv/podman.sock' });
  });

  test('the configured socketPath beats DOCKER_HOST', () => {
    const c = resolveConnection({ socketPath: '/srv/docker.sock' }, { DOCKER_HOST: 'tcp://10.0.0.5:2375' });
    expect(c).toEqual({ kind: 'socket', socketPath: '/srv/docker.sock', endpoint: 'unix:///srv/docker.sock' });
  });

  test('ssh:// is INVALID_CONFIG with the socket-forwarding hint', () => {
    const e = syncSandboxError(() => resolveConnection({}, { DOCKER_HOST: 'ssh://me@build-box' }));
    expect(e.code).toBe('INVALID_CONFIG');
    expect(e.message).toContain('ssh://me@build-box');
    expect(e.message).toContain('ssh -L /tmp/docker.sock:/var/run/docker.sock');
    expect(e.message).toContain('DOCKER_HOST=unix:///tmp/docker.sock');
  });

  test('unix:// with no path is INVALID_CONFIG', () => {
    expect(syncSandboxError(() => resolveConnection({ host: 'unix://' }, {})).code).toBe('INVALID_CONFIG');
  });
});
