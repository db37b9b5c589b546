/**
 * The built package (dist/), which the CLI, child-process and end-to-end tests run.
 * `npm test` builds it before jest starts; no test rebuilds it, since other files' child
 * processes load it at the same time.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const DIST = join(ROOT, 'dist');
export const CLI = join(DIST, 'cli', 'main.js');
export const DIST_INDEX = join(DIST, 'index.js');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/**
 * For a beforeAll: `file` (default dist/index.js) must exist. A dist/ older than src/ only
 * warns: the tests then run the last build, not the current sources.
 */
export function requireBuiltPackage(file: string = DIST_INDEX): void {
  if (!existsSync(file)) {
    throw new Error(`${file} is missing: these tests run the built package. Run \`npm run build\` first (npm test does).`);
  }
  if (newestMtime(join(ROOT, 'src')) > statSync(file).mtimeMs) {
    console.warn(`${file} is older than src/: these tests run the built package; run \`npm run build\` to test the current sources.`);
  }
}

/**
 * Starts a sandbox from `spec` on the Kubernetes engine of `kubeconfig` in another Node process
 * and removes it there with the synchronous exit-time remover (which blocks its caller's event
 * loop, so a stand-in API server running in this process could not answer it from here).
 */
export async function removedSyncElsewhere(kubeconfig: string, spec: { name?: string }): Promise<{ id: string; left: string[] }> {
  requireBuiltPackage();
  const script = `
    const { KubernetesEngine } = await import(${JSON.stringify(DIST_INDEX)});
    const spec = JSON.parse(process.argv[1]);
    spec.expiresAt = new Date(spec.expiresAt);
    const engine = new KubernetesEngine({ kubeconfig: ${JSON.stringify(kubeconfig)} });
    const id = await engine.createContainer(spec);
    await engine.startContainer(id);
    process.stdout.write(JSON.stringify({ id, left: engine.removeContainersSync([id], 10000) }));`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script, JSON.stringify(spec)], {
    timeout: 60_000,
  });
  return JSON.parse(stdout) as { id: string; left: string[] };
}
