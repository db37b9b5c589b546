/**
 * A remote engine over TLS: the second dockerd on loopback (scripts/engine/second-engine.sh),
 * reached the way a build server's engine is, with DOCKER_HOST=tcp://..., DOCKER_TLS_VERIFY
 * and DOCKER_CERT_PATH. Everything but host folders works; those are refused with the reason.
 * The engine is observed through its own docker CLI, not through the code under test.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DockerEngine, LABEL, SandboxError, SandboxManager } from '../../../src/index.js';
import { sweepContainers, processAlive } from '../../../src/sandbox/sweep.js';
import { currentOwner } from '../../../src/sandbox/labels.js';
import { CLI, requireBuiltPackage } from '../../support/built-package.js';
import { fileSession, newTestSessionId, currentSession, MINIMAL_IMAGE } from '../../support/engine.js';
import { startSecondEngine, type SecondEngine } from '../../support/second-engine.js';
import { removeTempDirs, tempDir, testConfig } from '../../support/temp-dirs.js';

fileSession('remote-engine');
let second: SecondEngine;
let engine: DockerEngine;

beforeAll(async () => {
  requireBuiltPackage(CLI);
  second = await startSecondEngine();
  engine = new DockerEngine({}, second.env);
}, 300_000);

/** Containers of this file's sessions on the second engine, by its CLI. */
async function sessionContainers(): Promise<string[]> {
  const r = await second.cli([
    'ps',
    '-a',
    '-q',
    '--no-trunc',
    '--filter',
    `label=${LABEL.managed}=true`,
    '--format',
    '{{.ID}} {{.Labels}}',
  ]);
  if (r.code !== 0) throw new Error(`docker ps on the second engine failed: ${r.stderr}`);
  return r.stdout
    .split('\n')
    .filter((l) => l.includes(`${LABEL.session}=${currentSession()}`))
    .map((l) => l.split(' ')[0]!);
}

afterAll(async () => {
  removeTempDirs();
  const left = await sessionContainers();
  if (left.length > 0) {
    await second.cli(['rm', '-f', ...left]);
    throw new Error(`containers left on the second engine: ${left.join(', ')}`);
  }
});

function manager(overrides: Parameters<typeof testConfig>[0] = {}): SandboxManager {
  return new SandboxManager({ config: testConfig(overrides), engine, sessionId: newTestSessionId(), sweepOnStart: false });
}

test('the connection is TLS to the address DOCKER_HOST names, and info says which engine it is', async () => {
  expect(engine.connection).toMatchObject({ kind: 'tcp', protocol: 'https', host: '127.0.0.1', endpoint: second.env.DOCKER_HOST });
  const info = await engine.info();
  expect(info.kind).toBe('docker');
  expect(info.endpoint).toBe(second.env.DOCKER_HOST);
});

test('start, exec, files and stop work on the remote engine, and the container is there', async () => {
  const m = manager();
  try {
    const sb = await m.start({ image: MINIMAL_IMAGE });
    const inspect = await second.cli(['container', 'inspect', '--format', '{{.State.Running}}', sb.id]);
    expect(inspect.stdout.trim()).toBe('true');
    const r = await sb.exec('echo out; echo err >&2; exit 3');
    expect(r).toMatchObject({ exitCode: 3, stdout: 'out\n', stderr: 'err\n' });
    await sb.writeFile('notes/a.txt', 'over TLS\n');
    expect((await sb.readFile('notes/a.txt')).text).toBe('over TLS\n');
    expect((await sb.exec(['cat', 'notes/a.txt'])).stdout).toBe('over TLS\n');
    await sb.stop();
    const gone = await second.cli(['container', 'inspect', sb.id]);
    expect(gone.code).not.toBe(0);
  } finally {
    await m[Symbol.asyncDispose]();
  }
}, 120_000);

test('host folders are refused with the reason, before anything is made: the project (ro, scratch, rw) and mounts', async () => {
  const host = tempDir('remote-host-');
  const m = new SandboxManager({
    config: testConfig({ project: { mount: 'rw' }, mountAllow: [{ hostPath: host, writable: false }] }),
    engine,
    sessionId: newTestSessionId(),
    sweepOnStart: false,
  });
  try {
    for (const start of [
      { project: 'ro' as const },
      { project: 'scratch' as const },
      { project: 'rw' as const },
      { mounts: [{ hostPath: host, containerPath: '/h' }] },
    ]) {
      const e = await m.start({ image: MINIMAL_IMAGE, ...start }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(SandboxError);
      expect((e as SandboxError).code).toBe('POLICY_VIOLATION');
      expect((e as SandboxError).message).toContain(`${second.env.DOCKER_HOST} is remote`);
      expect((e as SandboxError).message).toContain('a path on ITS machine');
    }
    expect(await sessionContainers()).toEqual([]);
  } finally {
    await m[Symbol.asyncDispose]();
  }
}, 60_000);

test('the sweep and the exit-time remover reach the remote engine', async () => {
  const m = manager();
  try {
    const a = await m.start({ image: MINIMAL_IMAGE });
    const b = await m.start({ image: MINIMAL_IMAGE });
    // The exit hook's synchronous remover (a child process speaking TLS with the same certificates).
    expect(engine.removeContainersSync([a.id], 20_000)).toEqual([]);
    expect((await second.cli(['container', 'inspect', a.id])).code).not.toBe(0);
    // The sweep, with this process taken for dead (other processes' containers stay).
    const report = await sweepContainers(engine, {
      self: { host: currentOwner().host, pid: -1 },
      isAlive: (pid) => pid !== process.pid && processAlive(pid),
    });
    expect(report.removed.map((c) => c.id)).toContain(b.id);
    expect(report.failed).toEqual([]);
    expect((await second.cli(['container', 'inspect', b.id])).code).not.toBe(0);
  } finally {
    await m[Symbol.asyncDispose]();
  }
}, 120_000);

test('TLS is checked: a client certificate the engine does not trust, or a missing one, is a clear error', async () => {
  // A folder with the right CA but a client certificate from another CA.
  const other = tempDir('remote-other-ca-');
  const openssl = (args: string[]) =>
    new Promise<void>((resolve, reject) => execFile('openssl', args, { cwd: other }, (e) => (e ? reject(e) : resolve())));
  await openssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=stranger',
    '-keyout',
    'key.pem',
    '-out',
    'cert.pem',
  ]);
  copyFileSync(join(second.env.DOCKER_CERT_PATH, 'ca.pem'), join(other, 'ca.pem'));
  const stranger = new DockerEngine({}, { ...second.env, DOCKER_CERT_PATH: other });
  const e1 = await stranger.info().catch((x: unknown) => x);
  expect(e1).toBeInstanceOf(SandboxError);
  expect(['ENGINE_UNAVAILABLE', 'ENGINE_ERROR']).toContain((e1 as SandboxError).code);

  const empty = tempDir('remote-no-certs-');
  mkdirSync(join(empty, 'sub'));
  const e2 = (() => {
    try {
      new DockerEngine({}, { ...second.env, DOCKER_CERT_PATH: empty });
      return undefined;
    } catch (x) {
      return x;
    }
  })();
  expect(e2).toBeInstanceOf(SandboxError);
  expect((e2 as SandboxError).code).toBe('INVALID_CONFIG');
  expect((e2 as SandboxError).message).toContain(join(empty, 'ca.pem'));
}, 60_000);

test('cleanup names the remote engine it sweeps (a dry run: nothing removed)', async () => {
  const out = await new Promise<string>((resolve) => {
    execFile(process.execPath, [CLI, 'cleanup', '--dry-run'], { env: { ...process.env, ...second.env }, timeout: 60_000 }, (_e, stdout) =>
      resolve(stdout),
    );
  });
  expect(out.split('\n')[0]).toMatch(new RegExp(`^engine docker \\S+ at ${second.env.DOCKER_HOST.replace(/\./g, '\\.')} \\(remote\\)$`));
  expect(out).toMatch(/^\d+ would remove, \d+ kept, 0 failed$/m);
}, 60_000);

test('doctor names the remote engine and says host folders are not mounted on it', async () => {
  const out = await new Promise<string>((resolve) => {
    execFile(process.execPath, [CLI, 'doctor'], { env: { ...process.env, ...second.env }, timeout: 60_000 }, (_e, stdout, stderr) =>
      resolve(stdout + stderr),
    );
  });
  expect(out).toContain(`at ${second.env.DOCKER_HOST}`);
  expect(out).toMatch(/remote engine \(TLS, certificates from .*client\)/);
  expect(out).toMatch(/project and host mounts are refused/);
}, 90_000);
