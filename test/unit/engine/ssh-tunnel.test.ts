import { execFileSync } from 'node:child_process';
import { resolveConnection, type SshConnection } from '../../../src/engine/connection.js';
import { forwardRefusedError, remoteSocketError, sshExitError } from '../../../src/engine/ssh-errors.js';
import { remoteCommand, sshArguments } from '../../../src/engine/ssh-tunnel.js';

const conn = resolveConnection({ host: 'ssh://me@build-box:2222' }, {}) as SshConnection;

describe('the ssh child', () => {
  test('no prompt, no shared master, one forward, the host after --', () => {
    const args = sshArguments(conn, '/run/user/1/gcd/engine.sock');
    const options = args.flatMap((a, i) => (args[i - 1] === '-o' ? [a] : []));
    expect(options).toEqual(
      expect.arrayContaining([
        'BatchMode=yes',
        'ExitOnForwardFailure=yes',
        'StreamLocalBindUnlink=yes',
        'ControlMaster=no',
        'ControlPath=none',
      ]),
    );
    expect(args).toEqual(expect.arrayContaining(['-p', '2222', '-l', 'me', '-L', '/run/user/1/gcd/engine.sock:/var/run/docker.sock']));
    expect(args.slice(-3)).toEqual(['--', 'build-box', remoteCommand('/var/run/docker.sock')]);
  });

  test('the remote check: no socket, a socket we may not use, then it holds until its input ends', () => {
    // Run with sh as the server's login shell would, on folders of this machine.
    const run = (path: string) => execFileSync('sh', ['-c', remoteCommand(path)], { input: '', encoding: 'utf8' });
    expect(run('/nonexistent/docker.sock')).toBe('gcd-no-socket\ngcd-no-access\ngcd-checked\n');
    expect(run('/etc')).toBe('gcd-no-socket\ngcd-checked\n'); // a folder, not a socket
  });
});

describe('the sentences', () => {
  test('an unknown host key names known_hosts and ssh-keyscan', () => {
    const e = sshExitError(
      conn,
      'No ED25519 host key is known for [build-box]:2222 and you have requested strict checking.\nHost key verification failed.\n',
      255,
    );
    expect(e.code).toBe('ENGINE_UNAVAILABLE');
    expect(e.message).toContain('not in your known_hosts');
    expect(e.message).toContain('ssh-keyscan -p 2222 build-box');
  });

  test('a changed host key says so, and how to replace it only after checking', () => {
    const e = sshExitError(conn, '@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @\nHost key verification failed.\n', 255);
    expect(e.message).toContain('CHANGED');
    expect(e.message).toContain("ssh-keygen -R '[build-box]:2222'");
  });

  test('refused authentication, an unreachable server, and anything else with what ssh said', () => {
    expect(sshExitError(conn, 'me@build-box: Permission denied (publickey,password).\n', 255).message).toContain(
      'refused to log in me@build-box (publickey,password)',
    );
    expect(sshExitError(conn, 'ssh: connect to host build-box port 2222: Connection refused\n', 255).message).toContain('could not reach');
    const other = sshExitError(conn, 'something odd\x1b[31m\n', 255);
    expect(other.message).toContain('something odd');
    expect(other.message).not.toContain('\x1b'); // the server's text is made safe to show
  });

  test('the remote socket: missing, not ours to use, or refused by sshd', () => {
    expect(remoteSocketError(conn, 'no-socket').message).toContain('no engine socket at /var/run/docker.sock');
    expect(remoteSocketError(conn, 'no-access').message).toContain('docker group');
    expect(forwardRefusedError(conn, 'channel 2: open failed: connect failed: open failed\n').message).toContain(
      'AllowStreamLocalForwarding',
    );
  });
});
