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

  test('ssh://: user, host, port and the remote socket (the default, the path part, or engine.ssh.remoteSocket)', () => {
    expect(resolveConnection({}, { DOCKER_HOST: 'ssh://me@build-box' })).toEqual({
      kind: 'ssh',
      host: 'build-box',
      user: 'me',
      remoteSocket: DEFAULT_SOCKET_PATH,
      endpoint: 'ssh://me@build-box',
    });
    expect(resolveConnection({ host: 'ssh://build-box:2222/run/user/1000/docker.sock' }, {})).toEqual({
      kind: 'ssh',
      host: 'build-box',
      port: 2222,
      remoteSocket: '/run/user/1000/docker.sock',
      endpoint: 'ssh://build-box:2222/run/user/1000/docker.sock',
    });
    const c = resolveConnection(
      { ssh: { remoteSocket: '/run/podman/podman.sock', configFile: '/etc/gcd/ssh_config' } },
      { DOCKER_HOST: 'ssh://[::1]' },
    );
    expect(c).toMatchObject({ kind: 'ssh', host: '::1', remoteSocket: '/run/podman/podman.sock', configFile: '/etc/gcd/ssh_config' });
  });

  // Each part goes on ssh's command line or into the remote command: nothing may be read as an option or as shell.
  test.each([
    ['an option as the host', 'ssh://-oProxyCommand=touch%20/tmp/x'],
    ['an option as the user', 'ssh://-oProxyCommand=id@host'],
    ['a space in the host', 'ssh://host -oProxyCommand=id'],
    ['a quote in the socket path', "ssh://host/var/run/docker.sock';touch /tmp/x;'"],
    ['a command substitution in the socket path', 'ssh://host/$(id).sock'],
    ['a parent folder in the socket path', 'ssh://host/var/run/../../etc/shadow'],
    ['a port out of range', 'ssh://host:70000'],
    ['a port that is not a number', 'ssh://host:22x'],
    ['no host', 'ssh://me@'],
    ['a newline in the host', 'ssh://host\nProxyCommand id'],
  ])('ssh:// with %s is INVALID_CONFIG', (_what, address) => {
    const e = syncSandboxError(() => resolveConnection({ host: address }, {}));
    expect(e.code).toBe('INVALID_CONFIG');
    expect(e.message).toContain('ssh://[user@]host[:port]');
  });

  test('an unusable engine.ssh.remoteSocket is INVALID_CONFIG too', () => {
    expect(syncSandboxError(() => resolveConnection({ ssh: { remoteSocket: "/x' ; id" } }, { DOCKER_HOST: 'ssh://h' })).code).toBe(
      'INVALID_CONFIG',
    );
  });

  test('unix:// with no path is INVALID_CONFIG', () => {
    expect(syncSandboxError(() => resolveConnection({ host: 'unix://' }, {})).code).toBe('INVALID_CONFIG');
  });
});
