/**
 * The language images against a real engine: `genaicode-docker images list` and
 * `images pull` (from a registry on loopback) as a person runs them (the built CLI), and a
 * start by language whose golden image is not built here.
 */
import { spawnSync } from 'node:child_process';
import { CLI, requireBuiltPackage } from '../../support/built-package.js';
import { docker, engineSuite, MINIMAL_IMAGE } from '../../support/engine.js';
import { startLoopbackRegistry, type LoopbackRegistry } from '../../support/loopback-registry.js';
import { tempDir } from '../../support/temp-dirs.js';

let registry: LoopbackRegistry | undefined;
engineSuite('language-images', { afterAll: () => registry?.stop() });
beforeAll(() => requireBuiltPackage(CLI));

/** An image name no one builds: a golden image missing on this engine. */
const NOT_BUILT = 'genaicode-docker/not-built-language-test:latest';

function runCli(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd: tempDir('gcd-lang-cli-'),
    encoding: 'utf8',
    timeout: 120_000,
    env: {
      ...process.env,
      GENAICODE_DOCKER_CONFIRM_START: 'false',
      XDG_STATE_HOME: tempDir('gcd-lang-state-'),
      XDG_CONFIG_HOME: tempDir('gcd-lang-config-'),
      ...env,
    },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('images list: a present image with its size and age, a missing one as missing with how to build it', async () => {
  const env = { GENAICODE_DOCKER_IMAGE_GO: MINIMAL_IMAGE, GENAICODE_DOCKER_IMAGE_RUBY: NOT_BUILT };
  const table = runCli(['images', 'list', 'go', 'ruby', 'dotnet'], env);
  expect(table.status).toBe(0);
  const lines = table.stdout.trimEnd().split('\n');
  expect(lines[0]).toMatch(/^LANGUAGE +IMAGE +STATUS +SIZE +CREATED +GET IT$/);
  expect(lines[1]).toMatch(
    new RegExp(
      `^go +${MINIMAL_IMAGE.replace(/[/.]/g, '\\$&')} +present +\\d+ MB +(\\d+ \\w+ ago|just now) +build offline \\(images build go\\)$`,
    ),
  );
  expect(lines[2]).toMatch(/^ruby +genaicode-docker\/not-built-language-test:latest +missing +- +- +build offline \(images build ruby\)$/);
  expect(lines[3]).toMatch(
    /^dotnet +genaicode-docker\/dotnet:latest +(missing|present) .*needs a registry \(build docker\/dotnet\/Dockerfile\)$/,
  );
  const json = JSON.parse(runCli(['images', 'go', '--json'], env).stdout) as Array<Record<string, unknown>>;
  const inspected = JSON.parse((await docker(['image', 'inspect', MINIMAL_IMAGE])).stdout) as Array<{ Size: number }>;
  expect(json).toEqual([
    {
      language: 'go',
      image: MINIMAL_IMAGE,
      present: true,
      sizeBytes: inspected[0]!.Size,
      createdAt: expect.any(String),
      get: 'build-offline',
    },
  ]);
}, 60_000);

test('images pull: a language image from a registry, a bar per layer (plain lines off a terminal), then present', async () => {
  registry = await startLoopbackRegistry();
  const ref = await registry.pushFreshLayer('gcd-lang/go:1', 8 * 1024 ** 2);
  const env = { GENAICODE_DOCKER_IMAGE_GO: ref, GENAICODE_DOCKER_ALLOWED_IMAGES: `127.0.0.1:${registry.port}/**` };
  expect(runCli(['images', 'go'], env).stdout).toMatch(/ missing .*pull \(images pull go\)$/m);
  const pulled = runCli(['images', 'pull', 'go'], env);
  expect(pulled.status).toBe(0);
  expect(pulled.stderr).toContain(`pulling ${ref} (go)`);
  // A layer's line: its id, a bar, its status; no control characters off a terminal.
  expect(pulled.stderr).toMatch(/^[0-9a-f]{12} \[[#-]{24}\] +\d+% (Downloading|Download complete|Pull complete|Extracting)/m);
  expect(pulled.stderr).toMatch(/^[0-9a-f]{12} \[#{24}\] 100% Pull complete$/m);
  expect(pulled.stderr).not.toMatch(/\x1b/); // eslint-disable-line no-control-regex
  expect(pulled.stdout).toMatch(new RegExp(`^${ref.replace(/[/.]/g, '\\$&')} pulled in \\d+ s$`, 'm'));
  expect((await docker(['image', 'inspect', ref])).code).toBe(0);
  expect(runCli(['images', 'go'], env).stdout).toMatch(/ present +\d+ MB /);
}, 120_000);

test('images pull of a golden image: built here, not pulled; a start by language with it missing: IMAGE_NOT_FOUND with the build command', () => {
  const env = { GENAICODE_DOCKER_IMAGE_GO: NOT_BUILT };
  const pull = runCli(['images', 'pull', 'go'], env);
  expect(pull.status).toBe(1);
  expect(pull.stderr).toContain(
    `${NOT_BUILT} (go) is built on this machine, not pulled (images.localOnly): genaicode-docker images build go`,
  );
  const run = runCli(['run', '--json', '--language', 'go', '--', 'true'], env);
  expect(run.status).toBe(125);
  const error = JSON.parse(run.stdout) as { code: string; error: string };
  expect(error.code).toBe('IMAGE_NOT_FOUND');
  expect(error.error).toContain('never pulled');
  expect(error.error).toContain('genaicode-docker images build go');
  const both = runCli(['run', '--language', 'go', '--image', MINIMAL_IMAGE, '--', 'true'], env);
  expect(both.status).not.toBe(0);
  expect(both.stderr).toMatch(/cannot be used with/);
}, 60_000);
