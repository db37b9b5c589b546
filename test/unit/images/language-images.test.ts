import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG_FILE_NAME, DEFAULT_IMAGE } from '../../../src/config/config-schema.js';
import { detectProjectLanguage } from '../../../src/project/project-language.js';
import { imageForLanguage } from '../../../src/images/language-images.js';
import { LANGUAGES } from '../../../src/config/languages.js';
import { loadConfig } from '../../../src/config/load-config.js';
import { PullLayers } from '../../../src/images/pull-layers.js';
import { ageText, formatImageList, images, parseBuildLine, type ImageRow } from '../../../src/cli/images.js';
import { barText, ProgressBoard } from '../../../src/cli/progress.js';
import { chooseImage } from '../../../src/images/golden-images.js';
import { prePullImages, prePullLanguages } from '../../../src/images/pre-pull.js';
import { PullFlights } from '../../../src/images/pull-flights.js';
import { SandboxManager } from '../../../src/sandbox/sandbox-manager.js';
import { FakeEngine } from '../../support/fake-engine.js';
import { removeTempDirs, sandboxError, syncSandboxError, tempDir, testConfig } from '../helpers.js';

afterEach(() => removeTempDirs());

function project(files: Record<string, string> = {}): string {
  const root = tempDir('gcd-lang-');
  writeFileSync(join(root, '.genaicoderc'), '{"rootDir":"."}');
  for (const [name, text] of Object.entries(files)) writeFileSync(join(root, name), text);
  return root;
}

describe('the image of a language', () => {
  test('defaults: genaicode-docker/<language>:latest, for each of the eight', () => {
    const config = testConfig();
    expect(LANGUAGES.map((l) => imageForLanguage(config, l))).toEqual(LANGUAGES.map((l) => `genaicode-docker/${l}:latest`));
  });

  test('images.languages, and GENAICODE_DOCKER_IMAGE_<LANGUAGE> over it', () => {
    const root = project();
    const config = loadConfig({
      cwd: root,
      env: { GENAICODE_DOCKER_IMAGE_PYTHON: 'python:3.12-slim' },
      overrides: { images: { languages: { go: 'golang:1.22' } }, logs: { dir: join(root, 'logs') } },
    });
    expect(imageForLanguage(config, 'python')).toBe('python:3.12-slim');
    expect(imageForLanguage(config, 'go')).toBe('golang:1.22');
    expect(imageForLanguage(config, 'ruby')).toBe('genaicode-docker/ruby:latest');
  });

  test('images.registry (GENAICODE_DOCKER_REGISTRY) goes in front of names with no registry of their own', () => {
    const root = project();
    const config = loadConfig({
      cwd: root,
      env: { GENAICODE_DOCKER_REGISTRY: 'registry.example.com/team/' },
      overrides: { images: { languages: { java: 'localhost:5000/java:21', go: 'golang:1.22' } }, logs: { dir: join(root, 'logs') } },
    });
    expect(imageForLanguage(config, 'python')).toBe('registry.example.com/team/genaicode-docker/python:latest');
    expect(imageForLanguage(config, 'go')).toBe('registry.example.com/team/golang:1.22');
    expect(imageForLanguage(config, 'java')).toBe('localhost:5000/java:21');
  });

  test('a bad registry, a bad image or an unknown language is INVALID_CONFIG naming it', () => {
    const root = project();
    const load =
      (env: Record<string, string>, images: object = {}) =>
      () =>
        loadConfig({ cwd: root, env, overrides: { images, logs: { dir: join(root, 'logs') } } });
    expect(syncSandboxError(load({ GENAICODE_DOCKER_REGISTRY: 'team' })).message).toMatch(/GENAICODE_DOCKER_REGISTRY: expected a registry/);
    expect(syncSandboxError(load({ GENAICODE_DOCKER_IMAGE_GO: 'Go:Latest' })).message).toMatch(/GENAICODE_DOCKER_IMAGE_GO/);
    expect(syncSandboxError(load({}, { languages: { cobol: 'x:1' } })).code).toBe('INVALID_CONFIG');
    expect(syncSandboxError(load({ GENAICODE_DOCKER_IMAGE_COBOL: 'x:1' })).message).toMatch(/Unknown environment variable/);
  });

  test("a project's file may set neither the registry nor a language's image from a registry; the user's may, on the user's allowlist", async () => {
    const root = project();
    writeFileSync(join(root, CONFIG_FILE_NAME), JSON.stringify({ images: { registry: 'evil.example.com' } }));
    const refused = syncSandboxError(() => loadConfig({ cwd: root, env: { XDG_CONFIG_HOME: tempDir() } }));
    expect(refused.code).toBe('INVALID_CONFIG');
    expect(refused.message).toMatch(/images\.registry decides which registry/);

    writeFileSync(join(root, CONFIG_FILE_NAME), JSON.stringify({ images: { languages: { python: 'evil.example.com/python:1' } } }));
    const mapped = syncSandboxError(() => loadConfig({ cwd: root, env: { XDG_CONFIG_HOME: tempDir() } }));
    expect(mapped.code).toBe('INVALID_CONFIG');
    expect(mapped.message).toMatch(/images\.languages\.python names evil\.example\.com\/python:1, which would be pulled from a registry/);

    // Set by the user (here in code), it is still checked against the allowlist.
    writeFileSync(join(root, CONFIG_FILE_NAME), '{}');
    const config = loadConfig({
      cwd: root,
      env: { XDG_CONFIG_HOME: tempDir() },
      overrides: { logs: { dir: join(root, 'logs') }, images: { languages: { python: 'evil.example.com/python:1' } } },
    });
    expect(imageForLanguage(config, 'python')).toBe('evil.example.com/python:1');
    const engine = new FakeEngine({ images: [DEFAULT_IMAGE] });
    expect((await sandboxError(() => chooseImage(config, engine, { language: 'python' }))).code).toBe('IMAGE_NOT_ALLOWED');
    // Picked by the project's language: not allowed, so the default, with a note.
    const choice = await chooseImage(config, engine, {}, 'python');
    expect(choice).toEqual({ image: DEFAULT_IMAGE, note: expect.stringContaining('is not on images.allow') });
    const manager = new SandboxManager({ config, engine, sweepOnStart: false });
    expect((await sandboxError(() => manager.start({ image: 'evil.example.com/python:1' }))).code).toBe('IMAGE_NOT_ALLOWED');
    expect(engine.callsOf('pullImage')).toEqual([]);
  });
});

describe("the project's language", () => {
  test.each([
    ['package.json', 'nodejs'],
    ['pyproject.toml', 'python'],
    ['requirements.txt', 'python'],
    ['setup.py', 'python'],
    ['go.mod', 'go'],
    ['pom.xml', 'java'],
    ['build.gradle', 'java'],
    ['build.gradle.kts', 'java'],
    ['Gemfile', 'ruby'],
    ['composer.json', 'php'],
    ['app.csproj', 'dotnet'],
    ['all.sln', 'dotnet'],
    ['build.ps1', 'powershell'],
  ])('%s: %s', (file, language) => {
    expect(detectProjectLanguage(project({ [file]: '' }))).toBe(language);
  });

  test('several markers: go, java, dotnet, python, ruby, php, nodejs, powershell, in that order', () => {
    expect(detectProjectLanguage(project({ 'package.json': '{}', 'requirements.txt': '' }))).toBe('python');
    expect(detectProjectLanguage(project({ 'package.json': '{}', 'go.mod': '' }))).toBe('go');
    expect(detectProjectLanguage(project({ 'composer.json': '{}', Gemfile: '' }))).toBe('ruby');
    expect(detectProjectLanguage(project({ 'x.ps1': '', 'package.json': '{}' }))).toBe('nodejs');
    expect(detectProjectLanguage(project({ 'pom.xml': '', 'x.csproj': '' }))).toBe('java');
  });

  test('none, a marker in a sub-folder, a folder named like a marker, a link to a marker elsewhere: no language', () => {
    expect(detectProjectLanguage(project({ 'README.md': '' }))).toBeUndefined();
    const nested = project();
    mkdirSync(join(nested, 'web'));
    writeFileSync(join(nested, 'web', 'package.json'), '{}');
    mkdirSync(join(nested, 'go.mod'));
    expect(detectProjectLanguage(nested)).toBeUndefined();
    const outside = project({ 'pom.xml': '' });
    const linked = project();
    symlinkSync(join(outside, 'pom.xml'), join(linked, 'pom.xml'));
    expect(detectProjectLanguage(linked)).toBeUndefined();
    expect(detectProjectLanguage(join(linked, 'no-such-folder'))).toBeUndefined();
  });
});

describe('choosing the image of a start', () => {
  const config = () => testConfig();

  test('image and language together: INVALID_ARGUMENT saying to give one', async () => {
    const e = await sandboxError(() => chooseImage(config(), new FakeEngine(), { image: 'alpine:3.20', language: 'go' }));
    expect(e.code).toBe('INVALID_ARGUMENT');
    expect(e.message).toMatch(/^Give either image or language, not both/);
  });

  test('a language whose golden image is not built: IMAGE_NOT_FOUND with the build command, before any pull', async () => {
    const engine = new FakeEngine();
    const e = await sandboxError(() => chooseImage(config(), engine, { language: 'go' }));
    expect(e.code).toBe('IMAGE_NOT_FOUND');
    expect(e.message).toContain('genaicode-docker images build go');
    const dotnet = await sandboxError(() => chooseImage(config(), engine, { language: 'dotnet' }));
    expect(dotnet.message).toMatch(/needs a registry to build: build \S+docker\/dotnet\/Dockerfile where one is reachable/);
    expect(engine.callsOf('pullImage')).toEqual([]);
  });

  test("neither: the project's language when its image is present, else the default with a note", async () => {
    const engine = new FakeEngine({ images: ['genaicode-docker/python:latest', DEFAULT_IMAGE] });
    expect(await chooseImage(config(), engine, {}, 'python')).toEqual({ image: 'genaicode-docker/python:latest', language: 'python' });
    expect(await chooseImage(config(), engine, {}, 'go')).toEqual({
      image: DEFAULT_IMAGE,
      note: `go image genaicode-docker/go:latest is not built (genaicode-docker images build go); started ${DEFAULT_IMAGE}`,
    });
    expect(await chooseImage(config(), engine, {})).toEqual({ image: DEFAULT_IMAGE });
  });

  test('neither, and the language image comes from a registry: it is chosen (it will be pulled)', async () => {
    const c = testConfig({ images: { registry: 'registry.example.com/team', allow: ['registry.example.com/**', 'genaicode-docker/*'] } });
    expect(await chooseImage(c, new FakeEngine(), {}, 'ruby')).toEqual({
      image: 'registry.example.com/team/genaicode-docker/ruby:latest',
      language: 'ruby',
    });
  });
});

describe('pulls in flight are shared', () => {
  test('two starts and a pre-pull of the same image: one pull; each start gets the image', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const config = testConfig({ images: { languages: { python: 'python:3.12' }, prePull: ['python'] } });
    const engine = new FakeEngine({ images: [DEFAULT_IMAGE], pullGate: () => gate });
    const manager = new SandboxManager({ config, engine, sweepOnStart: false });
    const messages: string[] = [];
    const pre = prePullImages({ config, engine, report: (m) => messages.push(m) });
    await new Promise((r) => setImmediate(r));
    const progress: string[] = [];
    const starts = [
      manager.start({ image: 'python:3.12', onPullProgress: (p) => progress.push(`a ${p.status}`) }),
      manager.start({ image: 'python:3.12', onPullProgress: (p) => progress.push(`b ${p.status}`) }),
    ];
    for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
    release();
    const sandboxes = await Promise.all(starts);
    await pre;
    expect(engine.callsOf('pullImage')).toHaveLength(1);
    // The pre-pull started it: its connection does not hold the process.
    expect(engine.callsOf('pullImage')[0]![3]).toEqual({ background: true });
    expect(sandboxes.map((s) => s.info.image)).toEqual(['python:3.12', 'python:3.12']);
    expect(messages[0]).toMatch(/pulling the python image python:3.12 in the background/);
    expect(messages.at(-1)).toMatch(/pulled python:3.12 in \d+ s/);
    await manager.stopAll();
  });

  test('a waiter that aborts leaves; the pull goes on for the others, and is aborted when nobody waits', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const engine = new FakeEngine({ pullGate: () => gate });
    const flights = new PullFlights();
    const ac = new AbortController();
    const first = flights.pull(engine, 'alpine:3.21', { signal: ac.signal });
    const second = flights.pull(engine, 'alpine:3.21');
    expect(flights.inFlight(engine, 'alpine:3.21')).toBe(true);
    ac.abort();
    expect((await sandboxError(() => first)).code).toBe('ABORTED');
    const [, , signal] = engine.callsOf('pullImage')[0]!;
    expect(signal?.aborted).toBe(false);
    release();
    await second;
    expect(flights.inFlight(engine, 'alpine:3.21')).toBe(false);
    expect(await engine.hasImage('alpine:3.21')).toBe(true);
    expect(engine.callsOf('pullImage')).toHaveLength(1);

    const lone = new AbortController();
    let releaseLone!: () => void;
    const engine2 = new FakeEngine({ pullGate: () => new Promise<void>((r) => (releaseLone = r)) });
    const only = flights.pull(engine2, 'alpine:3.22', { signal: lone.signal });
    await new Promise((r) => setImmediate(r));
    lone.abort();
    expect((await sandboxError(() => only)).code).toBe('ABORTED');
    expect(engine2.callsOf('pullImage')[0]![2]?.aborted).toBe(true);
    releaseLone?.();
  });
});

describe('pre-pull policy', () => {
  test("'project' is the detected language; a list is itself; false or [] is none", () => {
    expect(prePullLanguages('project', 'go')).toEqual(['go']);
    expect(prePullLanguages('project', undefined)).toEqual([]);
    expect(prePullLanguages(['java', 'php', 'java'], 'go')).toEqual(['java', 'php']);
    expect(prePullLanguages(false, 'go')).toEqual([]);
    expect(prePullLanguages([], 'go')).toEqual([]);
  });

  test('a golden image that is present: nothing; missing (built here): one message saying how to build it, no pull', async () => {
    const config = testConfig({ images: { prePull: ['python', 'go', 'dotnet'] } });
    const engine = new FakeEngine({ images: ['genaicode-docker/python:latest'] });
    const messages: string[] = [];
    await prePullImages({ config, engine, report: (m) => messages.push(m) });
    expect(engine.callsOf('pullImage')).toEqual([]);
    expect(messages).toEqual([
      expect.stringMatching(/the go image genaicode-docker\/go:latest is not present; build it with `genaicode-docker images build go`/),
      expect.stringMatching(/the dotnet image genaicode-docker\/dotnet:latest is not present; it needs a registry to build/),
    ]);
  });

  test('a pull reports start, each quarter it passes, then done; a failed pull says so', async () => {
    const layer = (current: number) => ({ id: 'aaaaaaaaaaaa', status: 'Downloading', current, total: 100 });
    const config = testConfig({
      images: { languages: { go: 'golang:1.22', ruby: 'ruby:3' }, allow: ['golang:*', 'ruby:*'], prePull: ['go', 'ruby'] },
    });
    const engine = new FakeEngine({
      pullable: (ref) => ref !== 'ruby:3',
      pullProgress: () => [10, 20, 30, 55, 60, 80, 100].map(layer),
    });
    const messages: string[] = [];
    await prePullImages({ config, engine, report: (m) => messages.push(m) });
    expect(messages.map((m) => m.replace(/\d+ s\.$/, 'N s.'))).toEqual([
      'genaicode-docker: pulling the go image golang:1.22 in the background.',
      'genaicode-docker: pulling golang:1.22: 25%',
      'genaicode-docker: pulling golang:1.22: 50%',
      'genaicode-docker: pulling golang:1.22: 75%',
      'genaicode-docker: pulled golang:1.22 in N s.',
      'genaicode-docker: pulling the ruby image ruby:3 in the background.',
      expect.stringMatching(/^genaicode-docker: the pull of ruby:3 failed: Image ruby:3 was not found/),
    ]);
  });
});

describe('images CLI', () => {
  test('the builder progress lines are read; others are not progress', () => {
    expect(parseBuildLine('[build-offline] genaicode-docker/go:latest step 2/5: apt packages (golang-go)')).toEqual({
      image: 'genaicode-docker/go:latest',
      kind: 'step',
      step: 2,
      total: 5,
      what: 'apt packages (golang-go)',
    });
    expect(parseBuildLine('[build-offline] genaicode-docker/go:latest built in 73 s')).toEqual({
      image: 'genaicode-docker/go:latest',
      kind: 'built',
      seconds: 73,
    });
    expect(parseBuildLine('[build-offline] genaicode-docker/php:latest present')).toEqual({
      image: 'genaicode-docker/php:latest',
      kind: 'present',
    });
    expect(
      parseBuildLine('[build-offline] dotnet needs a registry: build docker/dotnet/Dockerfile where one is reachable'),
    ).toBeUndefined();
    expect(parseBuildLine('[build-offline] genaicode-docker/go:latest step 6/5: too far')).toBeUndefined();
    expect(parseBuildLine('debootstrap: I: Retrieving InRelease')).toBeUndefined();
  });

  test('list: one aligned row per language: image, present, size in MB, age, how to get it', () => {
    const now = new Date('2026-01-10T12:00:00Z');
    const rows: ImageRow[] = [
      {
        language: 'python',
        image: 'genaicode-docker/python:latest',
        present: true,
        sizeBytes: 706_123_456,
        createdAt: new Date('2026-01-07T11:00:00Z'),
        get: 'build-offline',
      },
      { language: 'dotnet', image: 'genaicode-docker/dotnet:latest', present: false, get: 'needs-registry' },
      { language: 'go', image: 'registry.example.com/t/go:1', present: false, get: 'pull' },
    ];
    expect(formatImageList(rows, now)).toEqual([
      'LANGUAGE  IMAGE                           STATUS   SIZE    CREATED     GET IT',
      'python    genaicode-docker/python:latest  present  706 MB  3 days ago  build offline (images build python)',
      'dotnet    genaicode-docker/dotnet:latest  missing  -       -           needs a registry (build docker/dotnet/Dockerfile)',
      'go        registry.example.com/t/go:1     missing  -       -           pull (images pull go)',
    ]);
    expect(ageText(new Date(now.getTime() - 90_000), now)).toBe('1 minute ago');
    expect(ageText(now, now)).toBe('just now');
  });

  test('list --json and a language as the first word; an unknown language is exit 2', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (l: string) => out.push(l), err: (l: string) => err.push(l), progress: () => undefined, tty: false };
    const engine = new FakeEngine({
      images: ['genaicode-docker/go:latest'],
      imageInfo: { 'genaicode-docker/go:latest': { sizeBytes: 5e8 } },
    });
    expect(await images(testConfig(), ['go', 'php'], { json: true, force: false }, io, { engine })).toBe(0);
    expect(JSON.parse(out[0]!)).toEqual([
      { language: 'go', image: 'genaicode-docker/go:latest', present: true, sizeBytes: 5e8, get: 'build-offline' },
      { language: 'php', image: 'genaicode-docker/php:latest', present: false, get: 'build-offline' },
    ]);
    expect(await images(testConfig(), ['list', 'cobol'], { json: false, force: false }, io, { engine })).toBe(2);
    expect(err.at(-1)).toMatch(/unknown language "cobol"/);
  });

  test('build: the builder runs for the offline languages (with --force passed on), its steps drawn as plain lines off a terminal; dotnet needs a registry', async () => {
    const lines: string[] = [];
    const progress: string[] = [];
    const io = {
      out: (l: string) => lines.push(l),
      err: (l: string) => lines.push(l),
      progress: (t: string) => progress.push(t),
      tty: false,
    };
    const script = [
      'echo "[build-offline] genaicode-docker/go:latest step 1/2: debootstrap" >&2',
      'echo "some other line" >&2',
      'echo "[build-offline] genaicode-docker/go:latest step 2/2: import" >&2',
      'echo "[build-offline] genaicode-docker/go:latest built in 3 s" >&2',
      'echo "args: $*" >&2',
    ].join('\n');
    const code = await images(testConfig(), ['build', 'go', 'dotnet'], { json: false, force: true }, io, {
      engine: new FakeEngine(),
      builder: { command: 'sh', args: ['-c', script, 'builder'] },
    });
    expect(code).toBe(0);
    expect(lines).toEqual([
      expect.stringMatching(/dotnet:latest \(dotnet\) needs a registry: build \S*docker\/dotnet\/Dockerfile where one is reachable/),
    ]);
    const text = progress.join('');
    expect(text).not.toMatch(/\x1b/); // eslint-disable-line no-control-regex
    expect(text.split('\n')).toEqual([
      `genaicode-docker/go:latest [${'-'.repeat(24)}]   0% step 1/2: debootstrap`,
      'some other line',
      `genaicode-docker/go:latest [${'#'.repeat(12)}${'-'.repeat(12)}]  50% step 2/2: import`,
      `genaicode-docker/go:latest [${'#'.repeat(24)}] 100% built in 3 s`,
      'args: --force go',
      '',
    ]);
    expect(await images(testConfig(), ['build', 'powershell'], { json: false, force: false }, io, { engine: new FakeEngine() })).toBe(3);
  });

  test('progress bars on a terminal are redrawn in place; names from outside are shown safely', () => {
    const written: string[] = [];
    let now = 0;
    const board = new ProgressBoard(
      (t) => written.push(t),
      true,
      () => (now += 1000),
    );
    board.update('a', 'layer\u001b[31ma', 'Downloading', 0.5);
    board.update('b', 'layer-b', 'Waiting');
    board.update('a', 'layer\u001b[31ma', 'Download complete', 1);
    board.finish();
    expect(written[0]).toBe(`\x1b[2Klayer\\x1b[31ma ${barText(0.5)} Downloading\n`);
    expect(written[2]!.startsWith('\x1b[2A\x1b[2K')).toBe(true);
    expect(barText(undefined)).toBe(`[${' '.repeat(24)}]     `);
  });

  test('pull progress: layers and the share downloaded', () => {
    const layers = new PullLayers('x:1');
    expect(layers.update({ id: 'x:1', status: 'Pulling from library/x' })).toBeUndefined();
    layers.update({ id: 'aaaaaaaaaaaa', status: 'Downloading', current: 50, total: 100 });
    layers.update({ id: 'bbbbbbbbbbbb', status: 'Downloading', current: 0, total: 300 });
    expect(layers.fraction()).toBe(50 / 400);
    layers.update({ id: 'aaaaaaaaaaaa', status: 'Extracting', current: 1, total: 100 });
    layers.update({ id: 'bbbbbbbbbbbb', status: 'Pull complete' });
    expect(layers.fraction()).toBe(350 / 400);
  });
});
