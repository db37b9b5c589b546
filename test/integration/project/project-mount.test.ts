/**
 * The GenAIcode project mounted at /workspace (seed 004), on a real engine: who owns what a
 * container writes, the paths a writable mount keeps read-only (tried as an attacker
 * would, several ways each), the list of changes, and the limits of what may be asked.
 */
import { chownSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { LABEL, loadConfig, SandboxError, type Config, type ConfigInput } from '../../../src/index.js';
import type { Sandbox } from '../../../src/sandbox/sandbox.js';
import { engineSuite, listManaged, PYTHON_IMAGE, withManager } from '../../support/engine.js';
import { tempDir } from '../../support/temp-dirs.js';
import { chownTree, isRoot, owner } from '../../support/project-owner.js';

engineSuite('project-mount');

/** A project as GenAIcode has it: .genaicoderc, a git folder with a hook, a source file; owned by the user. */
function project(options: { git?: boolean; projectFile?: boolean } = {}): string {
  const root = tempDir('gcd-mounted-');
  writeFileSync(join(root, '.genaicoderc'), JSON.stringify({ rootDir: '.' }));
  if (options.git !== false) {
    mkdirSync(join(root, '.git', 'hooks'), { recursive: true });
    writeFileSync(join(root, '.git', 'config'), '[core]\n\tbare = false\n');
    writeFileSync(join(root, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  }
  if (options.projectFile) writeFileSync(join(root, '.genaicode-docker.json'), '{"limits":{"pids":128}}');
  mkdirSync(join(root, 'src'));
  writeFileSync(join(root, 'src', 'app.py'), 'print("v1")\n');
  writeFileSync(join(root, 'README.md'), 'readme\n');
  if (isRoot) chownTree(root);
  return root;
}

function configFor(root: string, overrides: ConfigInput = {}): Config {
  return loadConfig({
    cwd: root,
    env: {},
    overrides: { project: { mount: 'rw' }, logs: { dir: join(tempDir('gcd-mount-logs-'), 'logs') }, ...overrides },
  });
}

async function inProject<T>(root: string, mount: 'ro' | 'rw', fn: (s: Sandbox) => Promise<T>, overrides: ConfigInput = {}): Promise<T> {
  return withManager(
    async (manager) => {
      const s = await manager.start({ image: PYTHON_IMAGE, project: mount });
      try {
        return await fn(s);
      } finally {
        await s.stop();
      }
    },
    { config: configFor(root, overrides) },
  );
}

async function run(s: Sandbox, cmd: string): Promise<{ exitCode: number | null; out: string }> {
  const r = await s.exec(cmd, { timeoutMs: 20_000 });
  return { exitCode: r.exitCode, out: `${r.stdout}${r.stderr}` };
}

async function startError(root: string, mount: 'ro' | 'rw' | 'none', overrides: ConfigInput = {}): Promise<SandboxError> {
  return withManager(
    async (manager) => {
      let caught: unknown;
      try {
        await manager.start({ image: PYTHON_IMAGE, project: mount });
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(SandboxError);
      expect(await listManaged({ [LABEL.session]: manager.sessionId })).toEqual([]);
      return caught as SandboxError;
    },
    { config: configFor(root, overrides) },
  );
}

describe('a writable project mount', () => {
  test.concurrent('the project is at /workspace; what the container writes is owned by the user, with a home for caches', async () => {
    const root = project();
    await inProject(root, 'rw', async (s) => {
      const r = await run(
        s,
        'pwd; id -u; id -g; cat src/app.py; echo new > made.txt; mkdir -p pkg/sub && echo x > pkg/sub/m.py; echo "$HOME"',
      );
      expect(r.exitCode).toBe(0);
      expect(r.out.split('\n').slice(0, 4)).toEqual(['/workspace', String(owner.uid), String(owner.gid), 'print("v1")']);
      expect(r.out).toContain('/tmp');
    });
    for (const p of ['made.txt', 'pkg', 'pkg/sub/m.py']) {
      const st = statSync(join(root, p));
      expect({ p, uid: st.uid, gid: st.gid }).toEqual({ p, uid: owner.uid, gid: owner.gid });
    }
    expect(readFileSync(join(root, 'made.txt'), 'utf8')).toBe('new\n');
  });

  test.concurrent('the change list: created, changed, deleted; a git folder made anywhere held back', async () => {
    const root = project();
    await withManager(
      async (manager) => {
        const s = await manager.start({ image: PYTHON_IMAGE, project: 'rw' });
        const r = await run(
          s,
          'echo v2 > src/app.py; rm README.md; echo n > new.py; mkdir -p vendor/lib/.git && echo "[core]" > vendor/lib/.git/config',
        );
        expect(r.exitCode).toBe(0);
        await s.stop();
        const changes = await s.projectChanges();
        expect(changes).toMatchObject({
          created: ['new.py', 'vendor/', 'vendor/lib/'],
          changed: ['src/app.py'],
          deleted: ['README.md'],
          counts: { created: 3, changed: 1, deleted: 1 },
        });
        // A git folder made anywhere is not applied: git runs what its config names.
        expect(changes?.warnings?.[0]).toMatch(/^vendor\/lib\/\.git: changed in the container but NOT applied/);
      },
      { config: configFor(root) },
    );
  });

  test.concurrent('content rewritten with its old size and modification time is still listed as changed', async () => {
    const root = project();
    await withManager(
      async (manager) => {
        const s = await manager.start({ image: PYTHON_IMAGE, project: 'rw' });
        expect(
          (await run(s, 't=$(stat -c %y src/app.py); printf "print(\\"v9\\")\\n" > src/app.py; touch -d "$t" src/app.py')).exitCode,
        ).toBe(0);
        expect((await s.projectChanges())?.changed).toEqual(['src/app.py']);
      },
      { config: configFor(root) },
    );
  });

  test.concurrent('a log folder inside the project refuses a writable mount, not a read-only one', async () => {
    const root = project();
    const e = await startError(root, 'rw', { logs: { dir: join(root, 'logs') } });
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.message).toContain('log folder');
    await inProject(root, 'ro', async (s) => expect((await run(s, 'cat src/app.py')).out).toBe('print("v1")\n'), {
      logs: { dir: join(root, 'logs') },
    });
  });

  test.concurrent('as root, a project owned by root is not mounted writable (root-owned set-uid files could land in it)', async () => {
    if (!isRoot) return expect(isRoot).toBe(false);
    const root = project();
    chownSync(root, 0, 0);
    const e = await startError(root, 'rw');
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.message).toContain('root');
  });
});

describe('what may be asked', () => {
  test.concurrent('read-only: the project is readable and nothing in it can be written', async () => {
    const root = project();
    await inProject(root, 'ro', async (s) => {
      expect((await run(s, 'cat src/app.py')).out).toBe('print("v1")\n');
      for (const cmd of ['echo x > new.txt', 'rm README.md', 'mkdir d', 'touch src/app.py']) {
        expect({ cmd, exitCode: (await run(s, cmd)).exitCode }).not.toEqual({ cmd, exitCode: 0 });
      }
      expect(await s.projectChanges()).toBeUndefined();
    });
    expect(readdirSync(root).sort()).toEqual(['.genaicoderc', '.git', 'README.md', 'src']);
  });

  test.concurrent('more than project.mount allows is a POLICY_VIOLATION before any engine call', async () => {
    const root = project();
    for (const [allowed, asked] of [
      ['ro', 'rw'],
      ['none', 'ro'],
      ['none', 'rw'],
    ] as const) {
      const e = await startError(root, asked, { project: { mount: allowed } });
      expect(e.code).toBe('POLICY_VIOLATION');
      expect(e.message).toContain(`project.mount allows at most ${allowed}`);
    }
  });

  test.concurrent("a project's own .genaicode-docker.json cannot raise project.mount", () => {
    const root = project();
    writeFileSync(join(root, '.genaicode-docker.json'), JSON.stringify({ project: { mount: 'rw' } }));
    let caught: unknown;
    try {
      loadConfig({ cwd: root, env: {} });
    } catch (e) {
      caught = e;
    }
    expect(caught).toMatchObject({ code: 'INVALID_CONFIG' });
    expect((caught as Error).message).toContain('project.mount');
    writeFileSync(join(root, '.genaicode-docker.json'), JSON.stringify({ project: { mount: 'none' } }));
    expect(loadConfig({ cwd: root, env: {} }).project.mount).toBe('none');
  });
});

describe("the seed's flow in the golden images: a failing test, a fix made on the host, the test passing, in one container", () => {
  const flows = [
    {
      language: 'python',
      image: 'genaicode-docker/python:latest',
      files: {
        'calc.py': 'def add(a, b):\n    return a - b\n',
        'tests/test_calc.py': 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n',
      },
      fix: ['calc.py', 'def add(a, b):\n    return a + b\n'],
      // -B: no bytecode cache, whose check (mtime in seconds and size) misses a same-size fix made within the second.
      test: 'python3 -B -m pytest -q -p no:cacheprovider',
      failed: /1 failed/,
      passed: /1 passed/,
    },
    {
      language: 'nodejs',
      image: 'genaicode-docker/nodejs:latest',
      files: {
        'calc.js': 'exports.add = (a, b) => a - b;\n',
        'test/calc.test.js':
          "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('../calc.js');\ntest('add', () => assert.strictEqual(add(2, 3), 5));\n",
      },
      fix: ['calc.js', 'exports.add = (a, b) => a + b;\n'],
      test: 'node --test test/',
      failed: /# fail 1/,
      passed: /# pass 1/,
    },
  ] as const;

  test.concurrent.each(flows)('$language', async (flow) => {
    const root = project({ git: false });
    for (const [path, text] of Object.entries(flow.files)) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    }
    if (isRoot) chownTree(root);
    await withManager(
      async (manager) => {
        const s = await manager.start({ image: flow.image, project: 'rw' });
        const first = await s.exec(flow.test, { timeoutMs: 60_000 });
        expect(first.exitCode).not.toBe(0);
        expect(`${first.stdout}${first.stderr}`).toMatch(flow.failed);
        // The main model edits the file on the host, as GenAIcode does.
        writeFileSync(join(root, flow.fix[0]), flow.fix[1]);
        const second = await s.exec(flow.test, { timeoutMs: 60_000 });
        expect(`${second.stdout}${second.stderr}`).toMatch(flow.passed);
        expect(second.exitCode).toBe(0);
        await s.stop();
        // The host's edit is the project's own change, not the container's doing: the list has only the container's.
        expect((await s.projectChanges())?.changed ?? []).not.toContain(flow.fix[0]);
      },
      { config: configFor(root) },
    );
  });
});
