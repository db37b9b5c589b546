/**
 * DOCKER_HOST=ssh://root@127.0.0.1:<port>, spoken natively: a real OpenSSH server on loopback
 * (test/support/sshd.ts) in front of the main engine's socket, the client's keys and pinned
 * host key in an ssh_config file (engine.ssh.configFile). Everything goes through our own ssh
 * child: start, commands with input and output, files, stop, the sweep, the exit-time remover.
 * Owner processes end normally, by SIGTERM and by SIGKILL, and no ssh child outlives them.
 * The failures are sentences, and nothing is created: unknown or changed host key, no socket
 * at the path given, an sshd that forbids stream forwarding.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DockerEngine, SandboxError, SandboxManager } from '../../../src/index.js';
import { currentOwner } from '../../../src/sandbox/labels.js';
import { processAlive, sweepContainers } from '../../../src/sandbox/sweep.js';
import { CLI, requireBuiltPackage } from '../../support/built-package.js';
import {
  docker,
  engineSuite,
  inspectContainer,
  listSessionContainers,
  MINIMAL_IMAGE,
  newTestSessionId,
  waitFor,
} from '../../support/engine.js';
import { processesNaming, startSshd, type Sshd } from '../../support/sshd.js';
import { tempDir, testConfig } from '../../support/temp-dirs.js';

const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'ssh-owner-child.mjs');
let sshd: Sshd;
let noForwarding: Sshd;
const owners: Array<{ kill: (s: NodeJS.Signals) => boolean }> = [];
const engines: DockerEngine[] = [];

engineSuite('ssh-native', {
  afterAll: () => {
    for (const o of owners) o.kill('SIGKILL');
    // This process's own forwards: their sshd sessions would hold sshd's log pipe open.
    for (const e of engines) e.sshTunnel?.end();
    sshd?.process.kill('SIGKILL');
    noForwarding?.process.kill('SIGKILL');
  },
});

beforeAll(async () => {
  requireBuiltPackage();
  [sshd, noForwarding] = await Promise.all([startSshd(), startSshd({ forwarding: false })]);
}, 60_000);

const address = (s: Sshd, path = '') => `ssh://root@127.0.0.1:${s.port}${path}`;

function manager(engine: DockerEngine, sessionId = newTestSessionId()): SandboxManager {
  engines.push(engine);
  return new SandboxManager({ config: testConfig(), engine, sessionId, sweepOnStart: false });
}

/** No ssh child (nor its wrapper) of this config file is left, within a bound that proves nothing hangs. */
async function expectNoSshLeft(configFile: string): Promise<void> {
  await waitFor(
    `no ssh process of ${configFile} left`,
    async () => (processesNaming(configFile).length === 0 ? true : undefined),
    10_000,
    50,
  );
}

test('through our own ssh child: info, start, commands with input, files, stop, the sweep and the exit-time remover', async () => {
  const engine = new DockerEngine({ host: address(sshd), ssh: { configFile: sshd.clientConfig } }, {});
  expect(engine.connection.kind).toBe('ssh');
  const info = await engine.info();
  expect(info).toMatchObject({ kind: 'docker', endpoint: address(sshd) });
  // One ssh child, named by its config file, and the local socket in a folder only we may enter.
  expect(processesNaming(engine.sshTunnel!.socketPath).length).toBeGreaterThan(0);
  expect(statSync(dirname(engine.sshTunnel!.socketPath)).mode & 0o777).toBe(0o700);
  const m = manager(engine);
  try {
    const sb = await m.start({ image: MINIMAL_IMAGE });
    expect(await sb.exec('echo out; echo err >&2; exit 3')).toMatchObject({ exitCode: 3, stdout: 'out\n', stderr: 'err\n' });
    expect((await sb.exec(['wc', '-c'], { stdin: Buffer.alloc(1 << 20, 'x') })).stdout.trim()).toBe(String(1 << 20));
    await sb.writeFile('notes/a.txt', 'over ssh://\n');
    expect((await sb.readFile('notes/a.txt')).text).toBe('over ssh://\n');
    await sb.stop();
    expect(await inspectContainer(sb.id)).toBeUndefined();

    // The exit hook's synchronous remover goes through the same forward.
    const a = await m.start({ image: MINIMAL_IMAGE });
    expect(engine.removeContainersSync([a.id], 20_000)).toEqual([]);
    expect(await inspectContainer(a.id)).toBeUndefined();

    // The sweep, with this process taken for dead.
    const b = await m.start({ image: MINIMAL_IMAGE });
    const report = await sweepContainers(engine, {
      self: { host: currentOwner().host, pid: -1 },
      isAlive: (pid) => pid !== process.pid && processAlive(pid),
    });
    expect(report.removed.map((c) => c.id)).toContain(b.id);
    expect(report.failed).toEqual([]);
    expect(await inspectContainer(b.id)).toBeUndefined();

    // The engine is remote: its paths are the server's, so the project mount is refused.
    await expect(m.start({ image: MINIMAL_IMAGE, project: 'ro' })).rejects.toMatchObject({
      code: 'POLICY_VIOLATION',
      data: { rule: 'localHostPaths' },
    });
  } finally {
    await m[Symbol.asyncDispose]();
  }
}, 120_000);

/** Starts an owner process on the ssh:// engine; resolves with its container and the pid of its ssh child. */
async function owner(mode: 'wait' | 'exit', sessionId: string) {
  const proc = spawn(process.execPath, [FIXTURE, mode, sessionId, address(sshd), sshd.clientConfig, tempDir('gcd-ssh-owner-')], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  owners.push(proc);
  let out = '';
  let err = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    proc.once('exit', (code, signal) => r({ code, signal })),
  );
  const line = await waitFor(
    'the owner to print its container',
    async () => (out.includes('\n') ? out.slice(0, out.indexOf('\n')) : proc.exitCode !== null ? `ended: ${err}` : undefined),
    60_000,
  );
  if (line.startsWith('ended:')) throw new Error(`the owner ended before starting its sandbox: ${line}`);
  const { id, sshPid, socket } = JSON.parse(line) as { id: string; sshPid: number; socket: string };
  return { proc, id, sshPid, socket, exited };
}

test.each(['exit', 'SIGTERM'] as const)(
  'an owner that ends by %s: its exit hook removes the container over ssh://, then no ssh child is left',
  async (how) => {
    const sessionId = newTestSessionId();
    const o = await owner(how === 'exit' ? 'exit' : 'wait', sessionId);
    expect(processAlive(o.sshPid)).toBe(true);
    if (how === 'SIGTERM') o.proc.kill('SIGTERM');
    const ended = await o.exited;
    expect(how === 'exit' ? ended.code : ended.signal).toBe(how === 'exit' ? 0 : 'SIGTERM');
    // The exit hook ran through the forward before the forward ended.
    expect(await inspectContainer(o.id)).toBeUndefined();
    await expectNoSshLeft(o.socket);
    expect(existsSync(dirname(o.socket))).toBe(false);
  },
  120_000,
);

test('an owner SIGKILLed: no ssh child is left (its container stays for the sweep)', async () => {
  const sessionId = newTestSessionId();
  const o = await owner('wait', sessionId);
  expect(existsSync(dirname(o.socket))).toBe(true);
  o.proc.kill('SIGKILL');
  await o.exited;
  await expectNoSshLeft(o.socket);
  // The wrapper removed the forward's folder after ssh ended.
  await waitFor('the forward folder removed', async () => (existsSync(dirname(o.socket)) ? undefined : true), 10_000, 50);
  expect((await inspectContainer(o.id))?.State.Running).toBe(true);
  await docker(['rm', '-f', o.id]); // ours: the sweep's test is above
}, 120_000);

/** A start that must fail with ENGINE_UNAVAILABLE and `sentence`, having created nothing. */
async function refused(host: string, configFile: string, sentence: RegExp, from: 'config' | 'DOCKER_HOST' = 'config'): Promise<void> {
  const sessionId = newTestSessionId();
  const engine =
    from === 'config'
      ? new DockerEngine({ host, ssh: { configFile } }, {})
      : withDockerHost(host, () => new DockerEngine({ ssh: { configFile } }));
  const m = manager(engine, sessionId);
  try {
    const e = await m.start({ image: MINIMAL_IMAGE }).then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(SandboxError);
    expect((e as SandboxError).code).toBe('ENGINE_UNAVAILABLE');
    expect((e as SandboxError).message).toMatch(sentence);
    expect(await listSessionContainers(sessionId)).toEqual([]);
  } finally {
    await m[Symbol.asyncDispose]();
  }
  await expectNoSshLeft(engine.sshTunnel!.socketPath);
}

test('an unknown host key is refused with the sentence (known_hosts, ssh-keyscan), never a prompt, and nothing is created', async () => {
  await refused(address(sshd), sshd.unknownKeyConfig, /not in your known_hosts.*ssh-keyscan -p \d+ 127\.0\.0\.1/);
}, 60_000);

test.each(['config', 'DOCKER_HOST'] as const)(
  'a changed host key (address from %s) is refused with the sentence, and nothing is created',
  async (from) => {
    // From $DOCKER_HOST too: dockerode reads that variable itself, and must not take its own ssh transport from it.
    await refused(address(sshd), sshd.changedKeyConfig, /host key has CHANGED/, from);
  },
  60_000,
);

/** `make()` with $DOCKER_HOST set to `host` (dockerode reads it when its client is made, and at each request). */
function withDockerHost<T>(host: string, make: () => T): T {
  const saved = process.env.DOCKER_HOST;
  process.env.DOCKER_HOST = host;
  afterAllRestore.push(() => (saved === undefined ? delete process.env.DOCKER_HOST : (process.env.DOCKER_HOST = saved)));
  return make();
}
const afterAllRestore: Array<() => unknown> = [];
afterEach(() => {
  for (const f of afterAllRestore.splice(0)) f();
});

test('no socket at the path given: the sentence names it', async () => {
  await refused(address(sshd, '/run/nothing-here/docker.sock'), sshd.clientConfig, /no engine socket at \/run\/nothing-here\/docker\.sock/);
}, 60_000);

test('a server whose sshd forbids stream forwarding: the sentence says so', async () => {
  await refused(address(noForwarding), noForwarding.clientConfig, /sshd refused to forward.*AllowStreamLocalForwarding/);
}, 60_000);

test('doctor names the ssh:// address and says it goes through OpenSSH', async () => {
  const env = { ...process.env, DOCKER_HOST: address(sshd), GENAICODE_DOCKER_SSH_CONFIG: sshd.clientConfig, NODE_OPTIONS: '' };
  const out = await new Promise<string>((resolve) => {
    execFile(process.execPath, [CLI, 'doctor'], { env, timeout: 60_000 }, (_e, stdout, stderr) => resolve(stdout + stderr));
  });
  expect(out).toContain(`at ${address(sshd)}`);
  expect(out).toMatch(
    /remote engine \(through OpenSSH: `ssh -F \S+ -p \d+ root@127\.0\.0\.1` forwards its socket \/var\/run\/docker\.sock/,
  );
  expect(out).toMatch(/project and host mounts are refused/);
}, 90_000);
