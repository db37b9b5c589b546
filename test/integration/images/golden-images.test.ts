/**
 * The golden language images that docker/build-offline.sh makes from Debian packages (and
 * scripts/setup.sh --test builds): each is present with the settings of its Dockerfile, and
 * its own toolchain compiles and tests docker/<language>/hello inside it with no network,
 * the same check the builder runs before an image counts as built. The two languages whose
 * toolchains Debian does not package are reported as needing a registry.
 */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { docker, engineSuite } from '../../support/engine.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const BUILDER = join(root, 'docker', 'build-offline.sh');

engineSuite('golden-images');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], timeoutMs = 120_000): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** docker/<language>/hello piped into a new container of the image, and its check.sh run there. */
function checkHello(language: string): Promise<Run> {
  return run('bash', [
    '-c',
    'set -o pipefail; tar -C "$1" -c . | docker run -i --rm --network none "$2" /bin/sh -c "mkdir -p /tmp/hello && cd /tmp/hello && tar -x && exec sh ./check.sh"',
    'check-hello',
    join(root, 'docker', language, 'hello'),
    `genaicode-docker/${language}:latest`,
  ]);
}

/** What each check prints when the toolchain compiled, tested and linted the hello-world project. */
const LANGUAGES: Array<[string, RegExp[]]> = [
  ['python', [/^Hello, Python!$/m, /^1 passed/m]],
  ['nodejs', [/^Hello, Node\.js!$/m, /^# pass 1$/m, /^# fail 0$/m, /^npm \d+\.\d+\.\d+$/m]],
  ['java', [/^Hello, Java!$/m, /^HelloTest: 1 passed$/m, /1 tests successful/, /^Apache Maven 3\./m]],
  ['go', [/^go version go1\.\d+/m, /^ok\s+example\.com\/hello/m]],
  ['ruby', [/^Hello, Ruby!$/m, /^1 runs, 1 assertions, 0 failures, 0 errors, 0 skips$/m, /no offenses detected/]],
  ['php', [/^No syntax errors detected in Greet\.php$/m, /^Hello, PHP!$/m, /^OK \(1 test, 1 assertion\)$/m]],
];

interface ImageInspect {
  Config: { Env: string[] | null; WorkingDir: string; Cmd: string[] | null; Labels: Record<string, string> | null };
}

describe.each(LANGUAGES)('genaicode-docker/%s:latest', (language, expected) => {
  const image = `genaicode-docker/${language}:latest`;

  test.concurrent('is present, with the working folder, locale, command and labels of its Dockerfile', async () => {
    const r = await docker(['image', 'inspect', image]);
    if (r.code !== 0)
      throw new Error(`${image} is missing: build it with \`bash scripts/setup.sh --test\` (or docker/build-offline.sh ${language}).`);
    const [inspect] = JSON.parse(r.stdout) as ImageInspect[];
    expect(inspect?.Config.WorkingDir).toBe('/workspace');
    expect(inspect?.Config.Env).toContain('LANG=C.UTF-8');
    expect(inspect?.Config.Cmd).toEqual(['sleep', 'infinity']);
    expect(inspect?.Config.Labels?.['org.opencontainers.image.title']).toBe(`genaicode-docker/${language}`);
    expect(inspect?.Config.Labels?.['genaicode-docker.recipe']).toMatch(/^[0-9a-f]{16}$/);
    // No HOME is set by the image (the sandbox sets one per container); /tmp is for everyone.
    expect(inspect?.Config.Env?.some((e) => e.startsWith('HOME='))).toBe(false);
    const tmp = await docker(['run', '--rm', '--network', 'none', image, 'stat', '-c', '%a %U', '/tmp', '/workspace']);
    expect(tmp.stdout.split('\n').slice(0, 2)).toEqual(['1777 root', '755 root']);
  });

  test.concurrent(`its toolchain builds, tests and lints docker/${language}/hello inside it, with no network`, async () => {
    const r = await checkHello(language);
    if (r.code !== 0) throw new Error(`check.sh failed in ${image} (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
    for (const pattern of expected) expect(r.stdout).toMatch(pattern);
    expect(r.stdout).toMatch(new RegExp(`^hello-${language}: ok$`, 'm'));
  });
});

describe('the builder', () => {
  test('says that dotnet and powershell need a registry, and exits 3 when nothing else was asked for', async () => {
    const r = await run('bash', [BUILDER, 'dotnet', 'powershell']);
    expect(r.code).toBe(3);
    expect(r.stderr.trim().split('\n')).toEqual([
      '[build-offline] genaicode-docker/dotnet:latest needs a registry: build docker/dotnet/Dockerfile where one is reachable',
      '[build-offline] genaicode-docker/powershell:latest needs a registry: build docker/powershell/Dockerfile where one is reachable',
    ]);
  });

  test('leaves the images of its current recipe alone, asked by short name or by image name', async () => {
    const r = await run('bash', [BUILDER, 'python', 'genaicode-docker/go:latest', 'dotnet']);
    expect(r.code).toBe(0);
    expect(r.stderr.trim().split('\n')).toEqual([
      '[build-offline] genaicode-docker/dotnet:latest needs a registry: build docker/dotnet/Dockerfile where one is reachable',
      '[build-offline] genaicode-docker/python:latest present',
      '[build-offline] genaicode-docker/go:latest present',
    ]);
  });

  test('refuses an unknown name', async () => {
    const r = await run('bash', [BUILDER, 'cobol']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^\[build-offline\] unknown argument: cobol /);
  });
});
