/**
 * The Kubernetes engine against a real cluster: not part of the usual suite (no cluster runs
 * on the machines it runs on). It runs when KUBECONFIG is set, or with `npm run test:cluster`,
 * which fails loudly without one. The namespace (GENAICODE_DOCKER_TEST_NAMESPACE, default
 * "default") gets pods and the deny-all NetworkPolicy; the image
 * (GENAICODE_DOCKER_TEST_IMAGE, default busybox:1.36) must be one the cluster's nodes can pull.
 */
import { KubernetesEngine, SandboxManager, type Sandbox } from '../../src/index.js';
import { testConfig, removeTempDirs } from '../support/temp-dirs.js';

const image = process.env.GENAICODE_DOCKER_TEST_IMAGE || 'busybox:1.36';
const namespace = process.env.GENAICODE_DOCKER_TEST_NAMESPACE || 'default';

let engine: KubernetesEngine;

beforeAll(async () => {
  if (!process.env.KUBECONFIG)
    throw new Error(
      'The cluster test needs a cluster: set KUBECONFIG to a kube config whose current context reaches one (docs/scale-out.md).',
    );
  engine = new KubernetesEngine({ namespace });
  // Fails here, with the adapter's sentence, when the cluster does not answer.
  await engine.info();
});

afterAll(() => removeTempDirs());

test('a sandbox on the cluster: exec, files, labels and the end', async () => {
  const config = testConfig({ images: { default: image, allow: [image] }, ttlSeconds: 300, user: '1000:1000' });
  const manager = new SandboxManager({ config, engine, sweepOnStart: false });
  let sandbox: Sandbox | undefined;
  try {
    sandbox = await manager.start();
    const r = await sandbox.exec('echo out; echo err >&2; id -u; exit 3');
    expect(r).toMatchObject({ exitCode: 3, stdout: 'out\n1000\n', stderr: 'err\n' });
    await sandbox.writeFile('notes.txt', 'x'.repeat(200_000));
    expect((await sandbox.readFileBytes('notes.txt')).length).toBe(200_000);
    const state = await engine.inspectContainer(sandbox.id);
    expect(state?.running).toBe(true);
    const listed = await engine.listContainers({ 'genaicode-docker.managed': 'true' });
    expect(listed.map((c) => c.id)).toContain(sandbox.id);
  } finally {
    await sandbox?.stop();
    await manager[Symbol.asyncDispose]();
  }
  expect(await engine.inspectContainer(sandbox!.id)).toBeUndefined();
});
