/**
 * The Kubernetes adapter against a stand-in of the API server (test/support/kube-standin.ts):
 * the same HTTP and exec WebSocket framing a cluster speaks, its pods real containers on the
 * local engine. What the adapter asked for is observed on the stand-in's records and through
 * the docker CLI, never through the adapter itself. No real cluster runs here; see
 * test/cluster/ for the test that uses one.
 */
import { LABEL, KubernetesEngine, SandboxError, sweepContainers, type ContainerSpec, type StartOptions } from '../../../src/index.js';
import { docker, engineSuite, MINIMAL_IMAGE, waitFor, withManager } from '../../support/engine.js';
import { KubeStandin } from '../../support/kube-standin.js';
import { singleFileTar } from '../../../src/files/container-files.js';
import { removedSyncElsewhere } from '../../support/built-package.js';
import { copier, running, waitForProcess } from '../../support/mark-copier.js';
import { writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { tempDir } from '../../support/temp-dirs.js';

let standin: KubeStandin;
let engine: KubernetesEngine;

engineSuite('kubernetes', { afterAll: () => standin?.stop() });

beforeAll(async () => {
  standin = await new KubeStandin().start();
  engine = new KubernetesEngine({ kubeconfig: standin.kubeconfig });
});

function podSpec(name: string, over: Partial<ContainerSpec> = {}): ContainerSpec {
  return {
    image: MINIMAL_IMAGE,
    name,
    entrypoint: ['sleep'],
    cmd: ['300'],
    env: ['GREETING=hello there'],
    labels: { [LABEL.managed]: 'true', [LABEL.owner]: 'somehost:1', [LABEL.session]: `k8s-${standin.runId}` },
    workdir: '/work',
    memoryBytes: 128 * 1024 * 1024,
    nanoCpus: 500_000_000,
    pidsLimit: 64,
    network: 'none',
    readOnlyRoot: false,
    tmpfs: [],
    tmpfsVolumes: [{ path: '/work', sizeBytes: 16 * 1024 * 1024 }],
    binds: [],
    capAdd: [],
    autoRemove: true,
    expiresAt: new Date(Date.now() + 300_000),
    ...over,
  };
}

async function run(id: string, cmd: string[], stdin?: Buffer | AsyncIterable<Buffer>) {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const s = await engine.exec(id, { cmd, ...(stdin !== undefined ? { stdin } : {}) }, (stream, chunk) =>
    (stream === 'stdout' ? out : err).push(Buffer.from(chunk)),
  );
  const { exitCode } = await s.done;
  return { exitCode, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
}

/** The local container's id if it still exists, else ''. */
async function containerLeft(name: string): Promise<string> {
  return (await docker(['ps', '-aq', '--filter', `name=^${name}$`])).stdout.trim();
}

async function started(name: string, over: Partial<ContainerSpec> = {}): Promise<string> {
  const id = await engine.createContainer(podSpec(name, over));
  await engine.startContainer(id);
  return id;
}

test('info() reads the API server version', async () => {
  const info = await engine.info();
  expect(info).toMatchObject({ kind: 'kubernetes', version: 'v1.31.0-standin', endpoint: standin.url });
});

test('a sandbox runs as a pod: the wrapper reports stdout, stderr and the exit code; stop deletes the pod', async () => {
  await withManager(
    async (manager) => {
      const sandbox = await manager.start({ image: MINIMAL_IMAGE });
      const container = standin.containerOf(sandbox.id);
      expect(container).toBeDefined();
      const r = await sandbox.exec('echo out; echo err >&2; exit 3');
      expect(r).toMatchObject({ exitCode: 3, stdout: 'out\n', stderr: 'err\n' });
      expect(standin.execs.every((e) => e.protocol === 'v5.channel.k8s.io')).toBe(true);
      // A timeout kills the command's tree from a second exec, as the pod's user: the sandbox goes on.
      const started = Date.now();
      const slow = await sandbox.exec('sleep 60; echo never', { timeoutMs: 1500 });
      expect(slow).toMatchObject({ timedOut: true, stdout: '' });
      expect(Date.now() - started).toBeLessThan(30_000);
      expect(await sandbox.exec('echo still here')).toMatchObject({ exitCode: 0, stdout: 'still here\n' });
      // The cluster ends the pod at its expiry: the deadline is the ttl (within the seconds the start took).
      const spec = standin.pods.get(sandbox.id)!.pod.spec!;
      expect(spec.activeDeadlineSeconds).toBeGreaterThan(manager.config.ttlSeconds - 30);
      expect(spec.activeDeadlineSeconds).toBeLessThanOrEqual(manager.config.ttlSeconds);
      await sandbox.stop();
      expect(standin.pods.has(sandbox.id)).toBe(false);
      expect(await containerLeft(container!)).toBe('');
    },
    { engine },
  );
});

test("a pod's exec marks: a command that copies a background process's mark into a daemon still loses it to its timeout", async () => {
  await withManager(
    async (manager) => {
      const sandbox = await manager.start({ image: MINIMAL_IMAGE });
      await sandbox.startProcess('exec sleep 1301');
      const victimMark = await waitForProcess(sandbox, 'sleep 1301');
      const pending = sandbox.exec(copier('sleep 1301', 'sleep 1302'), { timeoutMs: 5000 });
      expect(await waitForProcess(sandbox, 'sleep 1302')).toBe(victimMark);
      expect(await pending).toMatchObject({ timedOut: true, exitCode: 124 });
      expect(await running(sandbox, 'sleep 1302')).toBe(false);
      expect(await running(sandbox, 'sleep 1301')).toBe(true);
      await sandbox.stop();
    },
    { engine },
  );
});

test('files go over exec: a write then a read through the sandbox', async () => {
  await withManager(
    async (manager) => {
      const sandbox = await manager.start({ image: MINIMAL_IMAGE });
      const content = 'line one\n'.repeat(5000) + 'ünïcode end\n';
      const w = await sandbox.writeFile('sub/dir/notes.txt', content);
      expect(w.bytesWritten).toBe(Buffer.byteLength(content));
      expect((await sandbox.readFileBytes('sub/dir/notes.txt')).toString('utf8')).toBe(content);
      // Nothing staged is left beside the working folder's files.
      const ls = await run(sandbox.id, ['ls', '-a', manager.config.workdir]);
      expect(ls.stdout.split('\n').filter((f) => f.startsWith('.gcd-'))).toEqual([]);
    },
    { engine },
  );
});

test('stdin ends with a close frame on the open connection: the exit status still arrives', async () => {
  const id = await started(`stdin-${standin.runId}`);
  const input = Buffer.alloc(3 * 1024 * 1024 + 17, 'x');
  const r = await run(id, ['/bin/sh', '-c', 'wc -c; exit 7'], input);
  expect(r).toMatchObject({ exitCode: 7, stdout: `${input.length}\n` });
  const record = standin.execs.find((e) => e.pod === id && e.command.includes('wc -c; exit 7'));
  expect(record).toMatchObject({ protocol: 'v5.channel.k8s.io', stdinClosedByFrame: true, exitCode: 7 });
  // A stream of input, in pieces.
  async function* pieces() {
    for (let i = 0; i < 5; i++) yield Buffer.from(`piece ${i}\n`);
  }
  expect(await run(id, ['cat'], pieces())).toMatchObject({ exitCode: 0, stdout: 'piece 0\npiece 1\npiece 2\npiece 3\npiece 4\n' });
  expect(await engine.removeContainer(id, true)).toBe(true);
});

test('env and working folder of an exec are said in its command line; a missing command is an exit code', async () => {
  const id = await started(`envwd-${standin.runId}`);
  const r = await engine.exec(
    id,
    { cmd: ['/bin/sh', '-c', 'echo "$GREETING|$EXTRA|$(pwd)"'], env: ['EXTRA=a b'], workdir: '/tmp' },
    () => undefined,
  );
  expect((await r.done).exitCode).toBe(0);
  expect(await run(id, ['/bin/sh', '-c', 'echo "$GREETING|$(pwd)"'])).toMatchObject({ stdout: 'hello there|/work\n' });
  const out: string[] = [];
  const s = await engine.exec(id, { cmd: ['/bin/sh', '-c', 'echo "$EXTRA|$(pwd)"'], env: ['EXTRA=a b'], workdir: '/tmp' }, (_s, c) =>
    out.push(c.toString()),
  );
  await s.done;
  expect(out.join('')).toBe('a b|/tmp\n');
  expect((await run(id, ['no-such-command-here'])).exitCode).not.toBe(0);
  await engine.removeContainer(id, true);
  // An exec in a pod that is gone: CONTAINER_NOT_FOUND, not a socket error.
  await expect(engine.exec(id, { cmd: ['true'] }, () => undefined)).rejects.toMatchObject({ code: 'CONTAINER_NOT_FOUND' });
});

test('an archive that arrives short is not unpacked: the length and checksum check refuses it', async () => {
  const id = await started(`short-${standin.runId}`);
  const tar = singleFileTar('victim.txt', Buffer.from('all of it\n'.repeat(1000)), { mode: 0o644, uid: 0, gid: 0 });
  await engine.extractArchive(id, '/work', tar);
  expect(await run(id, ['cat', '/work/victim.txt'])).toMatchObject({ stdout: 'all of it\n'.repeat(1000) });
  // The connection loses the rest (a cut copy), loses all of it, or alters a byte on the way.
  for (const [fault, received] of [
    [{ dropStdinAfter: 1024 }, /sent \d+ bytes, received 1024\)/],
    [{ dropStdinAfter: 0 }, /sent \d+ bytes, received 0\)/],
    [{ flipStdinByte: 700 }, /sent (\d+) bytes, received \1\)/],
  ] as const) {
    Object.assign(standin, fault);
    try {
      const cut = singleFileTar('cut.txt', Buffer.alloc(64 * 1024, 'y'), { mode: 0o644, uid: 0, gid: 0 });
      const e = await engine.extractArchive(id, '/work', cut).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(e).toBeInstanceOf(SandboxError);
      expect(e).toMatchObject({ code: 'FILE_OPERATION_FAILED', message: expect.stringMatching(received) });
    } finally {
      standin.dropStdinAfter = undefined;
      standin.flipStdinByte = undefined;
    }
  }
  const ls = await run(id, ['ls', '-a', '/work']);
  expect(ls.stdout.split('\n').filter(Boolean).sort()).toEqual(['.', '..', 'victim.txt']);
  expect(await engine.statPath(id, '/work')).toMatchObject({ type: 'dir' });
  expect(await engine.statPath(id, '/work/victim.txt')).toMatchObject({ type: 'file', size: 10_000 });
  expect(await engine.statPath(id, '/work/nothing')).toBeUndefined();
  await engine.removeContainer(id, true);
});

test('the hardening is in the pod: no capabilities, no new privileges, no token, no network, its user', async () => {
  const id = await started(`hard-${standin.runId}`, {
    user: '1000:1000',
    readOnlyRoot: true,
    tmpfs: [{ path: '/tmp', sizeBytes: 1 << 20 }],
  });
  const r = await run(id, [
    '/bin/sh',
    '-c',
    'id -u; id -g; grep -E "^(CapEff|CapPrm|NoNewPrivs)" /proc/self/status; ls /var/run/secrets/kubernetes.io 2>&1; ls /sys/class/net; touch /rootfile 2>&1 || echo readonly',
  ]);
  expect(r.stdout).toMatch(/^1000\n1000\n/);
  expect(r.stdout).toMatch(/CapPrm:\s+0+\n/);
  expect(r.stdout).toMatch(/CapEff:\s+0+\n/);
  expect(r.stdout).toMatch(/NoNewPrivs:\s+1\n/);
  expect(r.stdout).toMatch(/No such file or directory/);
  expect(r.stdout).toMatch(/\nlo\n/);
  expect(r.stdout).not.toMatch(/\neth0\n/);
  expect(r.stdout).toMatch(/readonly\n$/);
  expect(standin.policies.get('genaicode-docker-network-none')?.spec).toMatchObject({ policyTypes: ['Ingress', 'Egress'] });
  // The policy was there before the first pod that needs it: no moment with network.
  const firstPolicy = standin.requests.indexOf('POST /apis/networking.k8s.io/v1/namespaces/sandboxes/networkpolicies');
  const firstPod = standin.requests.indexOf('POST /api/v1/namespaces/sandboxes/pods');
  expect(firstPolicy).toBeGreaterThanOrEqual(0);
  expect(firstPolicy).toBeLessThan(firstPod);
  const pod = standin.pods.get(id)!.pod;
  expect(pod.spec).toMatchObject({ automountServiceAccountToken: false, hostNetwork: false, hostPID: false });
  await engine.removeContainer(id, true);
});

test('labels: selectable ones as labels, all of them verbatim in annotations; listed back whole', async () => {
  const id = await started(`labels-${standin.runId}`);
  const meta = standin.pods.get(id)!.pod.metadata!;
  expect(meta.labels).toMatchObject({ [LABEL.managed]: 'true', 'genaicode-docker.network': 'none' });
  expect(meta.labels![LABEL.owner]).toBeUndefined(); // "somehost:1" is no label value
  expect(meta.annotations).toMatchObject({ [LABEL.owner]: 'somehost:1' });
  const listed = await engine.listContainers({ [LABEL.session]: `k8s-${standin.runId}`, [LABEL.owner]: 'somehost:1' });
  expect(listed.map((c) => c.id)).toEqual([id]);
  expect(listed[0]!.labels).toMatchObject({ [LABEL.owner]: 'somehost:1', [LABEL.managed]: 'true' });
  expect(await engine.listContainers({ [LABEL.owner]: 'otherhost:1' })).toEqual([]);
  await engine.removeContainer(id, true);
});

test('the sweep finds pods by label selector and deletes those of a dead owner', async () => {
  const dead = await started(`dead-${standin.runId}`, {
    labels: {
      [LABEL.managed]: 'true',
      [LABEL.owner]: 'elsewhere-host:4194301',
      [LABEL.session]: `k8s-${standin.runId}`,
      [LABEL.expiresAt]: new Date(Date.now() - 120_000).toISOString(),
    },
  });
  const container = standin.containerOf(dead)!;
  const report = await sweepContainers(engine, {});
  expect(report.removed.map((r) => r.id)).toContain(dead);
  expect(standin.pods.has(dead)).toBe(false);
  expect(await containerLeft(container)).toBe('');
});

test('the expiry is the cluster\u2019s: the pod ends at its deadline with no client left', async () => {
  const short = new KubernetesEngine({ kubeconfig: standin.kubeconfig });
  const id = await short.createContainer(podSpec(`expiry-${standin.runId}`, { expiresAt: new Date(Date.now() + 3000) }));
  await short.startContainer(id);
  expect(standin.pods.get(id)!.pod.spec!.activeDeadlineSeconds).toBeLessThanOrEqual(3);
  // Nobody holds the engine any more: what ends the pod is its own deadline.
  const state = await waitFor(
    'the pod to end at its deadline',
    async () => {
      const s = await engine.inspectContainer(id);
      return s && !s.running ? s : undefined;
    },
    20_000,
  );
  expect(state.status).toBe('DeadlineExceeded');
  const running = await docker(['inspect', '-f', '{{.State.Running}}', standin.containerOf(id)!]);
  expect(running.stdout.trim()).toBe('false');
  await engine.removeContainer(id, true);
});

test('a project or host mount is refused with why and what to do instead; no pod is made', async () => {
  await withManager(
    async (manager) => {
      const before = standin.pods.size;
      const requests = standin.requests.length;
      const mountable = manager.config.projectRoot;
      for (const options of [
        { project: 'ro' },
        { project: 'rw' },
        { project: 'scratch' },
        { mounts: [{ hostPath: mountable, containerPath: '/data' }] },
      ] satisfies StartOptions[]) {
        const e = await manager.start({ image: MINIMAL_IMAGE, ...options }).then(
          () => undefined,
          (err: unknown) => err,
        );
        expect(e).toMatchObject({ code: 'POLICY_VIOLATION', message: expect.stringMatching(/cluster's nodes.*writeFile/s) });
      }
      expect(standin.pods.size).toBe(before);
      expect(standin.requests.slice(requests)).toEqual([]);
    },
    { engine, overrides: { project: { mount: 'rw' }, mountAllow: [{ hostPath: '.', writable: false }] } },
  );
});

test('an image the node cannot get fails the start with the kubelet-style reason', async () => {
  const id = await engine.createContainer(podSpec(`noimage-${standin.runId}`, { image: 'genaicode-docker/no-such-image:never' }));
  await expect(engine.startContainer(id)).rejects.toMatchObject({
    code: 'CONTAINER_START_FAILED',
    message: expect.stringMatching(/CreateContainerError/),
  });
  expect(await engine.removeContainer(id, true)).toBe(true);
  expect(await engine.removeContainer(id, true)).toBe(false);
});

test('the exit-time remover deletes pods synchronously, from a process that cannot wait on promises', async () => {
  const spec = podSpec(`exit-${standin.runId}`);
  const answer = await removedSyncElsewhere(standin.kubeconfig, spec);
  expect(answer).toEqual({ id: spec.name, left: [] });
  await waitFor('the pod to be gone', async () => (standin.pods.has(answer.id) ? undefined : true), 10_000);
});

test('a kube config that cannot be read, or a server that does not answer, is said in a sentence', async () => {
  await expect(new KubernetesEngine({ kubeconfig: '/nonexistent/kube/config' }).info()).rejects.toMatchObject({
    code: 'INVALID_CONFIG',
    message: expect.stringMatching(/kube config \/nonexistent\/kube\/config could not be used/),
  });
  const dir = tempDir('kube-closed-');
  const file = join(dir, 'config');
  // A port nothing listens on: this test's own server, closed again.
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: `https://127.0.0.1:${port}`, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'u', user: { token: 't' } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  const closed = new KubernetesEngine({ kubeconfig: file });
  await expect(closed.info()).rejects.toMatchObject({
    code: 'ENGINE_UNAVAILABLE',
    message: expect.stringMatching(/No Kubernetes API server answers at https:\/\/127\.0\.0\.1:\d+.*KUBECONFIG/s),
  });
  await expect(closed.listContainers({})).rejects.toMatchObject({ code: 'ENGINE_UNAVAILABLE' });
});
