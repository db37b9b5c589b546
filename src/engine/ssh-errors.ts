import { displayText as t } from '../display-text.js';
import { SandboxError } from '../errors.js';
import type { SshConnection } from './connection.js';

/**
 * The sentences an ssh:// engine fails with, from what OpenSSH printed (its stderr) and what
 * the remote check printed (its stdout, see REMOTE_CHECK in ssh-tunnel.ts). Each says what
 * went wrong and what to do; every text from ssh or the server is made safe to show first.
 */

/** The `ssh` command line a person runs to try the same connection by hand. */
export function sshCommandLine(conn: SshConnection): string {
  return ['ssh', ...(conn.configFile ? ['-F', conn.configFile] : []), ...(conn.port ? ['-p', String(conn.port)] : []), target(conn)].join(
    ' ',
  );
}

function target(conn: SshConnection): string {
  return conn.user ? `${conn.user}@${conn.host}` : conn.host;
}

/** The host as known_hosts and ssh-keyscan name it: [host]:port off port 22. */
function knownHostsName(conn: SshConnection): string {
  return conn.port && conn.port !== 22 ? `[${conn.host}]:${conn.port}` : conn.host;
}

function unavailable(conn: SshConnection, sentence: string): SandboxError {
  return new SandboxError('ENGINE_UNAVAILABLE', `The engine at ${t(conn.endpoint)} cannot be reached through OpenSSH: ${sentence}`);
}

/** The last lines ssh printed, made safe and short, for a failure we have no sentence of our own for. */
function lastLines(stderr: string): string {
  const lines = stderr.trim().split(/\r?\n/).filter(Boolean);
  return t(lines.slice(-3).join(' / '), 400) || 'it printed nothing';
}

/** ssh itself ended before the forward was up (exit code `code`): why, from its stderr. */
export function sshExitError(conn: SshConnection, stderr: string, code: number | null): SandboxError {
  const host = knownHostsName(conn);
  if (/REMOTE HOST IDENTIFICATION HAS CHANGED|Host key for .* has changed/.test(stderr))
    return unavailable(
      conn,
      `the server's host key has CHANGED since it was recorded in known_hosts: someone may be between you and ${t(conn.host)}, or its key was replaced. ` +
        `Ask its administrator for the key's fingerprint; only then remove the old entry (ssh-keygen -R '${t(host)}') and accept the new one with \`${t(sshCommandLine(conn))}\`.`,
    );
  if (/Host key verification failed|host key is known|No .* host key is known/.test(stderr))
    return unavailable(
      conn,
      `the server's host key is not in your known_hosts, and an unknown key is refused (no prompt is ever shown). ` +
        `Connect once by hand and check the fingerprint: \`${t(sshCommandLine(conn))}\`, or add it with \`ssh-keyscan ${conn.port ? `-p ${conn.port} ` : ''}${t(conn.host)} >> ~/.ssh/known_hosts\` after checking it.`,
    );
  if (/Permission denied \(/.test(stderr))
    return unavailable(
      conn,
      `the server refused to log in ${t(target(conn))} (${t(/Permission denied \(([^)]*)\)/.exec(stderr)?.[1] ?? '')}). ` +
        "The key must work without a prompt: a key in ~/.ssh (or IdentityFile in your ssh config) listed in the server's authorized_keys, or loaded into ssh-agent; passwords are never asked for.",
    );
  if (/ssh: (?:not found|command not found)|ssh: No such file/.test(stderr) || code === 127)
    return unavailable(conn, 'the OpenSSH client `ssh` is not installed here (Debian: apt-get install openssh-client).');
  if (
    /Could not resolve hostname|Connection refused|Connection timed out|No route to host|Network is unreachable|Connection closed by/.test(
      stderr,
    )
  )
    return unavailable(conn, `ssh could not reach the server (${lastLines(stderr)}). Check that \`${t(sshCommandLine(conn))}\` works.`);
  if (/forwarding|bind/i.test(stderr)) return unavailable(conn, `ssh could not set up the forward (${lastLines(stderr)}).`);
  return unavailable(
    conn,
    `ssh ended (exit code ${code ?? 'none'}): ${lastLines(stderr)}. Check that \`${t(sshCommandLine(conn))}\` works.`,
  );
}

/** The remote check found no socket, or one the login user may not use. */
export function remoteSocketError(conn: SshConnection, check: 'no-socket' | 'no-access'): SandboxError {
  const who = conn.user ? t(conn.user) : 'the login user';
  return check === 'no-socket'
    ? unavailable(
        conn,
        `there is no engine socket at ${t(conn.remoteSocket)} on the server (or ${who} cannot see it). ` +
          'Give its path in the address (ssh://host/run/user/1000/docker.sock) or engine.ssh.remoteSocket; for Podman, start its API service there.',
      )
    : unavailable(
        conn,
        `${who} may not use the engine socket ${t(conn.remoteSocket)} on the server: add the user to its docker group (then log in again), or log in as a user who may.`,
      );
}

/** The socket is there and usable, but a connection through the forward is refused: the server's sshd forbids it. */
export function forwardRefusedError(conn: SshConnection, stderr: string): SandboxError {
  return unavailable(
    conn,
    `the server's sshd refused to forward a connection to ${t(conn.remoteSocket)} (${lastLines(stderr)}). ` +
      'Its sshd_config must allow it: AllowStreamLocalForwarding yes (the default) and DisableForwarding no, and no restrict/no-port-forwarding option on your key in authorized_keys.',
  );
}

/** Nothing settled within the time allowed. */
export function sshTimeoutError(conn: SshConnection, seconds: number, stderr: string): SandboxError {
  return unavailable(
    conn,
    `the forward was not up within ${seconds} s (${lastLines(stderr)}). Check that \`${t(sshCommandLine(conn))}\` works.`,
  );
}
