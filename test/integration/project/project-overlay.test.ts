/**
 * The writable project as an overlay, on a real engine, tried as an attacker would: the
 * container never writes the host's tree; this process applies its changes after each
 * command, checked. Links out, special files, set-id bits, files the host runs, the host's
 * own edits, every path a container ends, and the scratch mode that applies nothing.
 */
import { chownSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig, type Config } from '../../../src/index.js';
import type { Sandbox } from '../../../src/sandbox/sandbox.js';
import { OVERLAYS_FOLDER } from '../../../src/project/project-overlay.js';
import { docker, dockerOk, engineSuite, inspectContainer, PYTHON_IMAGE, TEST_ENGINE, waitFor, withManager } from '../../support/engine.js';
import { tempDir } from '../../support/temp-dirs.js';
import { chownTree, DEV, isRoot, owner } from '../../support/project-owner.js';

engineSuite('project-overlay');

const HERE = dirname(fileURLToPath(import.meta.url));

function project(files: Record<string, string> = {}): string {
  const root = tempDir('gcd-overlay-');
  const all: Record<string, string> = {
    '.genaicoderc': JSON.stringify({ rootDir: '.' }),
    'src/app.py': 'print("v1")\n',
    'README.md': 'readme\n',
    ...files,
  };
  for (const [p, text] of Object.entries(all)) {
    mkdirSync(dirname(join(root, p)), { recursive: true });
    writeFileSync(join(root, p), text);
  }
  if (isRoot) chownTree(root);
  return root;
}

function configFor(root: string, mount: 'rw' | 'scratch' = 'rw'): Config {
  return loadConfig({ cwd: root, env: {}, overrides: { project: { mount }, logs: { dir: join(tempDir('gcd-overlay-logs-'), 'logs') } } });
}

async function inProject<T>(root: string, fn: (s: Sandbox) => Promise<T>, mount: 'rw' | 'scratch' = 'rw'): Promise<T> {
  return withManager(
    async (manager) => {
      const s = await manager.start({ image: PYTHON_IMAGE, project: mount });
      try {
        return await fn(s);
      } finally {
        await s.stop();
      }
    },
    { config: configFor(root, mount) },
  );
}

const sh = (s: Sandbox, cmd: string) => s.exec(cmd, { timeoutMs: 30_000 });

/** Every entry of the project, with what it is: the host's view after the container. */
function tree(root: string, rel = ''): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(root, rel)).sort()) {
    const p = rel ? `${rel}/${name}` : name;
    const st = lstatSync(join(root, p));
    if (st.isSymbolicLink()) out.push(`${p} -> ${readlinkSync(join(root, p))}`);
    else if (st.isDirectory()) out.push(`${p}/`, ...tree(root, p));
    else if (st.isFile()) out.push(p);
    else out.push(`${p} (special)`);
  }
  return out;
}

describe('the container never writes the host tree; its changes are applied after the command', () => {
  test.concurrent(
    'created, changed and deleted files reach the project at the command end, owned by the user, never while it runs',
    async () => {
      const root = project();
      await inProject(root, async (s) => {
        const running = sh(
          s,
          'echo new > made.txt; echo v2 > src/app.py; rm README.md; mkdir -p pkg/sub && echo m > pkg/sub/m.py; sleep 3; echo done',
        );
        await new Promise((r) => setTimeout(r, 2000));
        // While the command runs, the host has none of it.
        expect(existsSync(join(root, 'made.txt'))).toBe(false);
        expect(readFileSync(join(root, 'src/app.py'), 'utf8')).toBe('print("v1")\n');
        expect(existsSync(join(root, 'README.md'))).toBe(true);
        const r = await running;
        expect(r.exitCode).toBe(0);
        expect(readFileSync(join(root, 'made.txt'), 'utf8')).toBe('new\n');
        expect(readFileSync(join(root, 'src/app.py'), 'utf8')).toBe('v2\n');
        expect(existsSync(join(root, 'README.md'))).toBe(false);
        for (const p of ['made.txt', 'pkg', 'pkg/sub/m.py', 'src/app.py']) {
          const st = statSync(join(root, p));
          expect({ p, uid: st.uid, gid: st.gid }).toEqual({ p, uid: owner.uid, gid: owner.gid });
        }
        expect(await s.projectChanges()).toMatchObject({
          created: ['made.txt', 'pkg/', 'pkg/sub/', 'pkg/sub/m.py'],
          changed: ['src/app.py'],
          deleted: ['README.md'],
        });
      });
    },
  );

  test.concurrent('a folder removed and made again (opaque), renamed (EXDEV copy), replaced by a file', async () => {
    const root = project({ 'lib/a.py': 'a\n', 'lib/b.py': 'b\n', 'old/x.txt': 'x\n', 'dir2/y': 'y\n' });
    await inProject(root, async (s) => {
      const r = await sh(s, 'rm -rf lib && mkdir lib && echo c > lib/c.py; mv old renamed; rm -rf dir2; echo file > dir2');
      expect(r.exitCode).toBe(0);
    });
    expect(readdirSync(join(root, 'lib'))).toEqual(['c.py']);
    expect(readFileSync(join(root, 'renamed/x.txt'), 'utf8')).toBe('x\n');
    expect(existsSync(join(root, 'old'))).toBe(false);
    expect(readFileSync(join(root, 'dir2'), 'utf8')).toBe('file\n');
  });

  test.concurrent(
    'the seed flow: a file the container changed, then fixed on the host, is the host version at the next command',
    async () => {
      const root = project({ 'calc.py': 'def add(a, b):\n    return a - b\n' });
      await inProject(root, async (s) => {
        // The container touches the file (its copy now in the upper layer), as a formatter or a failed fix would.
        expect((await sh(s, 'echo "# checked" >> calc.py; cat calc.py')).exitCode).toBe(0);
        expect(readFileSync(join(root, 'calc.py'), 'utf8')).toContain('# checked');
        // Fixed on the host, in place, as GenAIcode's updateFile does.
        writeFileSync(join(root, 'calc.py'), 'def add(a, b):\n    return a + b\n');
        expect((await sh(s, 'cat calc.py')).stdout).toBe('def add(a, b):\n    return a + b\n');
        // And deleted on the host.
        writeFileSync(join(root, 'other.py'), 'o\n');
        if (isRoot) chownSync(join(root, 'other.py'), DEV.uid, DEV.gid);
        expect((await sh(s, 'echo o2 >> other.py')).exitCode).toBe(0);
        writeFileSync(join(root, 'calc.py'), 'def add(a, b):\n    return b + a\n');
        const { rmSync } = await import('node:fs');
        rmSync(join(root, 'other.py'));
        const r = await sh(s, 'cat calc.py; test -e other.py && echo STILL || echo GONE');
        expect(r.stdout).toBe('def add(a, b):\n    return b + a\nGONE\n');
      });
      expect(readFileSync(join(root, 'calc.py'), 'utf8')).toBe('def add(a, b):\n    return b + a\n');
      expect(existsSync(join(root, 'other.py'))).toBe(false);
    },
  );
});

describe('links, special files and set-id bits never reach the host', () => {
  test.concurrent('links out: absolute (existing or not), climbing, replacing a project file, through a link to the root', async () => {
    const root = project({ 'src/config.py': 'X = 1\n' });
    const secret = join(tempDir('gcd-host-secret-'), 'id_rsa.md');
    writeFileSync(secret, 'PRIVATE KEY');
    await inProject(root, async (s) => {
      const r = await sh(
        s,
        [
          `ln -s ${secret} notes.md`,
          'ln -s /somewhere/else.py src/new_module.py',
          'ln -sf /etc/passwd src/config.py',
          'mkdir -p deep/er && ln -s ../../../../../etc deep/er/up',
          'ln -s /root docs',
          'ln -s . self && ln -s self/../.. climb',
          'ln -s /workspace/src abs-src',
        ].join('; '),
      );
      expect(r.exitCode).toBe(0);
      const notApplied = r.projectNotApplied?.join('\n') ?? '';
      for (const p of ['notes.md', 'src/new_module.py', 'src/config.py', 'deep/er/up', 'docs', 'climb', 'abs-src'])
        expect(notApplied).toContain(`${p}:`);
      // A link to the project folder stays inside, but leads to .genaicoderc by another name: held.
      expect(notApplied).toContain('self: held back');
    });
    expect(tree(root).filter((p) => p.includes(' -> '))).toEqual([]);
    expect(readFileSync(join(root, 'src/config.py'), 'utf8')).toBe('X = 1\n');
  });

  test.concurrent('links that stay inside the project are made', async () => {
    const root = project();
    await inProject(root, async (s) => {
      expect((await sh(s, 'ln -s src/app.py main.py; mkdir -p a/b && ln -s ../../src a/b/src')).exitCode).toBe(0);
    });
    expect(readlinkSync(join(root, 'main.py'))).toBe('src/app.py');
    expect(readlinkSync(join(root, 'a/b/src'))).toBe('../../src');
  });

  test.concurrent('FIFOs and sockets are never made; set-uid and set-gid bits are dropped and said', async () => {
    const root = project();
    await inProject(root, async (s) => {
      const r = await sh(
        s,
        'mkfifo src/pipe.ts; python3 -c "import socket; socket.socket(socket.AF_UNIX).bind(\'sock\')"; echo x > tool; chmod 6644 tool; echo y > sticky; chmod 1644 sticky',
      );
      expect(r.exitCode).toBe(0);
      const lines = r.projectNotApplied?.join('\n') ?? '';
      expect(lines).toContain('src/pipe.ts: a FIFO');
      expect(lines).toContain('sock: a socket');
      expect(lines).toContain('tool: applied without its set-uid/set-gid bits');
    });
    expect(existsSync(join(root, 'src/pipe.ts'))).toBe(false);
    expect(existsSync(join(root, 'sock'))).toBe(false);
    expect(statSync(join(root, 'tool')).mode & 0o7777).toBe(0o644);
    expect(statSync(join(root, 'sticky')).mode & 0o7777).toBe(0o644);
  });
});

describe("GenAIcode 0.9.5's own file code on the tree the container leaves", () => {
  test.concurrent('its source scan, cache write, updateFile and createFile stay in the project and do not hang or crash', async () => {
    const root = project({ 'package.json': '{"name":"p"}\n', 'src/config.ts': 'export const X = 1;\n', 'src/index.ts': 'export {};\n' });
    const outside = tempDir('gcd-outside-');
    const systemFile = join(outside, 'system.conf');
    writeFileSync(systemFile, 'system\n');
    await inProject(root, async (s) => {
      const r = await sh(
        s,
        [
          `ln -s ${outside}/else.ts src/new_module.ts`,
          `ln -sf ${systemFile} src/config.ts`,
          `mkdir -p node_modules/.cache && ln -s ${outside} node_modules/.cache/genaicode`,
          'mkfifo src/pipe.ts',
          'ln -s /nonexistent/x.ts src/dangling.ts',
          'ln -s ../../../../.. src/up',
        ].join('; '),
      );
      expect(r.exitCode).toBe(0);
    });
    const { execFileSync } = await import('node:child_process');
    const out = execFileSync(
      process.execPath,
      [join(HERE, '../../support/genaicode-file-code.mjs'), root, 'src/config.ts', 'src/new_module.ts'],
      {
        env: { ...process.env, GENAICODE_DIST: join(HERE, '../../../node_modules/genaicode/dist') },
        timeout: 60_000,
      },
    );
    const result = JSON.parse(out.toString().slice(out.toString().indexOf('{"scan"'))) as Record<string, { ok: boolean }>;
    expect(result).toMatchObject({ scan: { ok: true }, cache: { ok: true }, update: { ok: true }, create: { ok: true } });
    expect(readdirSync(outside)).toEqual(['system.conf']);
    expect(readFileSync(systemFile, 'utf8')).toBe('system\n');
    expect(readFileSync(join(root, 'src/config.ts'), 'utf8')).toBe('updated by genaicode\n');
    expect(readFileSync(join(root, 'src/new_module.ts'), 'utf8')).toBe('created by genaicode\n');
    expect(tree(root).filter((p) => p.includes(' -> ') || p.includes('(special)'))).toEqual([]);
  });
});

describe('the upper folder changing under the apply', () => {
  test.concurrent(
    'a folder flipped to a link out and back while commands end and apply: nothing outside is read into the project or written',
    async () => {
      const root = project();
      const outside = tempDir('gcd-outside-');
      writeFileSync(join(outside, 'secret.txt'), 'SECRET');
      const flip = [
        'import os, time',
        'end = time.time() + 6',
        'n = 0',
        'while time.time() < end:',
        '    try:',
        "        os.mkdir('d'); open('d/secret.txt', 'w').write('mine'); os.mkdir('d/sub')",
        "        os.rename('d', 'd2'); os.symlink('OUTSIDE', 'd'); time.sleep(0.002); os.unlink('d')",
        "        os.symlink('OUTSIDE/secret.txt', 'd'); time.sleep(0.002); os.unlink('d'); os.rename('d2', 'd')",
        "        import shutil; shutil.rmtree('d')",
        '    except OSError:',
        '        pass',
        '    n += 1',
        'print(n)',
      ]
        .join('\n')
        .replaceAll('OUTSIDE', outside);
      await inProject(root, async (s) => {
        const flipping = s.exec(['python3', '-c', flip], { timeoutMs: 30_000 });
        let applies = 0;
        while (applies < 40) {
          await s.exec('true');
          applies++;
          // Between two applies, the host never sees the secret or a link.
          expect(tree(root).filter((p) => p.includes(' -> '))).toEqual([]);
        }
        const r = await flipping;
        expect(Number(r.stdout.trim())).toBeGreaterThan(10);
      });
      expect(readdirSync(outside)).toEqual(['secret.txt']);
      const files = tree(root).filter((p) => !p.endsWith('/') && !p.includes(' -> '));
      for (const f of files) expect({ f, text: readFileSync(join(root, f), 'utf8') }).not.toEqual({ f, text: 'SECRET' });
    },
    90_000,
  );
});

describe('files the host runs by itself are held back and named', () => {
  const held = [
    '.genaicoderc',
    'genaicode.config.js',
    'node_modules/.bin/jest',
    '.venv/bin/activate',
    'tests/unit/conftest.py',
    'packages/a/package.json',
    'sub/.envrc',
    'pom.xml',
    'build.gradle',
    '.cargo/config.toml',
    'pytest.ini',
    '.pylintrc',
    '.mise.toml',
    '.devcontainer/devcontainer.json',
    '.git/hooks/pre-commit',
    '.vscode/tasks.json',
    'eslint.config.mjs',
  ];

  test.concurrent('made or changed at any depth: not applied, named in the answer and the change list, kept for review', async () => {
    const root = project({ 'pom.xml': '<project/>\n', 'tests/unit/conftest.py': '# ok\n' });
    const before = tree(root);
    await inProject(root, async (s) => {
      const cmd = held.map((p) => `mkdir -p "$(dirname ${p})" && echo 'touch /tmp/pwned' > ${p}`).join('; ');
      const r = await sh(s, `${cmd}; printf '#!/bin/sh\\nid\\n' > run.sh; chmod 755 run.sh; echo ok > plain.txt`);
      expect(r.exitCode).toBe(0);
      const changes = await s.projectChanges();
      const warnings = changes?.warnings?.join('\n') ?? '';
      // Folders the host runs are held whole (never walked: node_modules may hold 100k files).
      const named = new Set(held.map((p) => /^(node_modules|\.venv|\.cargo|\.devcontainer|\.git|\.vscode)\//.exec(p)?.[1] ?? p));
      for (const p of [...named, 'run.sh']) expect(warnings).toContain(`${p}: changed in the container but NOT applied`);
      // Only the folders the held files were to go in are made (empty), and the plain file.
      expect(changes?.created).toEqual(['packages/', 'packages/a/', 'plain.txt', 'sub/']);
    });
    expect(tree(root)).toEqual([...before, 'packages/', 'packages/a/', 'plain.txt', 'sub/'].sort());
    expect(readFileSync(join(root, 'pom.xml'), 'utf8')).toBe('<project/>\n');
  });

  test.concurrent('a deletion of a file the host runs, or of a folder holding one, is held too', async () => {
    const root = project({ 'package.json': '{}\n', 'ws/a/package.json': '{}\n', 'ws/a/index.js': '1\n', 'run.sh': '#!/bin/sh\n' });
    const { chmodSync } = await import('node:fs');
    chmodSync(join(root, 'run.sh'), 0o755);
    await inProject(root, async (s) => {
      const r = await sh(s, 'rm package.json run.sh .genaicoderc; rm -rf ws');
      expect(r.exitCode).toBe(0);
      expect(r.projectNotApplied?.join('\n')).toContain('ws: held back');
    });
    for (const p of ['package.json', 'run.sh', '.genaicoderc', 'ws/a/package.json']) expect(existsSync(join(root, p))).toBe(true);
  });

  test.concurrent(
    'the plugin file .genaicoderc names, links to held files and replacements of them are held; modes lose group and other write',
    async () => {
      const plugin = "export default { name: 'docker' };\n";
      const root = project({
        '.genaicoderc': JSON.stringify({ rootDir: '.', plugins: ['./genaicode-docker.plugin.mjs'] }),
        'genaicode-docker.plugin.mjs': plugin,
        '.git/config': '[core]\n',
        'scripts/deploy.sh': '#!/bin/sh\necho deploy\n',
        'backend/conftest.py': '# ok\n',
        'web/package.json': '{}\n',
      });
      const { chmodSync } = await import('node:fs');
      chmodSync(join(root, 'scripts/deploy.sh'), 0o755);
      await inProject(root, async (s) => {
        const r = await sh(
          s,
          [
            'echo \'import("node:child_process").then((c) => c.execSync("id > /tmp/pwned"))\' > genaicode-docker.plugin.mjs',
            'echo \'{"rootDir":".","plugins":[]}\' > .genaicoderc',
            'ln -s ../.git/config src/notes.md',
            'ln -s .. src/root',
            'echo payload > scripts/payload.txt && rm scripts/deploy.sh && ln -s payload.txt scripts/deploy.sh',
            'rm -rf backend && echo flat > backend',
            'rm -rf web && ln -s scripts web',
            "printf 'pre-commit:\\n  commands:\\n    x:\\n      run: id\\n' > lefthook.yml",
            'echo shared > open.txt && chmod 666 open.txt',
          ].join(' && '),
        );
        expect(r.exitCode).toBe(0);
        const notApplied = r.projectNotApplied?.join('\n') ?? '';
        for (const p of [
          'genaicode-docker.plugin.mjs',
          '.genaicoderc',
          'src/notes.md',
          'src/root',
          'scripts/deploy.sh',
          'backend',
          'web',
          'lefthook.yml',
        ])
          expect(notApplied).toContain(`${p}: held back`);
      });
      expect(readFileSync(join(root, 'genaicode-docker.plugin.mjs'), 'utf8')).toBe(plugin);
      expect(readFileSync(join(root, 'scripts/deploy.sh'), 'utf8')).toBe('#!/bin/sh\necho deploy\n');
      for (const p of ['backend/conftest.py', 'web/package.json']) expect(existsSync(join(root, p))).toBe(true);
      for (const p of ['src/notes.md', 'src/root', 'lefthook.yml']) expect(existsSync(join(root, p))).toBe(false);
      expect(statSync(join(root, 'open.txt')).mode & 0o777).toBe(0o644);
    },
  );
});

describe('every end applies the last changes and leaves no folder of ours', () => {
  test.concurrent(
    'stop() under a running command applies what it wrote (never the link out); the overlay folders are removed',
    async () => {
      const root = project();
      const config = configFor(root);
      await withManager(
        async (manager) => {
          const s = await manager.start({ image: PYTHON_IMAGE, project: 'rw' });
          const running = sh(s, 'echo late > late.txt; ln -s /etc/shadow late-link; sleep 30').catch(() => undefined);
          // Both written in the container (the link comes second), however slow the command's start.
          await waitFor(
            'the link in the container',
            async () => ((await docker(['exec', s.id, 'test', '-L', '/workspace/late-link'])).code === 0 ? true : undefined),
            30_000,
            200,
          );
          expect(existsSync(join(root, 'late.txt'))).toBe(false); // while it runs, nothing reaches the host
          await s.stop();
          await running;
          expect(readFileSync(join(root, 'late.txt'), 'utf8')).toBe('late\n');
          expect(existsSync(join(root, 'late-link'))).toBe(false);
          expect(readdirSync(join(config.logs.dir, OVERLAYS_FOLDER)).filter((n) => n !== 'spent')).toEqual([]);
        },
        { config },
      );
    },
  );
});

describe('scratch: every tool writes, nothing reaches the host', () => {
  test.concurrent('writes, deletions and links stay in the container; the layer is thrown away at the end', async () => {
    const root = project();
    const before = tree(root);
    const config = configFor(root, 'scratch');
    await withManager(
      async (manager) => {
        const s = await manager.start({ image: PYTHON_IMAGE, project: 'scratch' });
        const r = await sh(
          s,
          'mkdir -p .pytest_cache build && echo c > .pytest_cache/v && echo o > build/out; rm README.md; ln -s /etc x; echo v2 > src/app.py; cat src/app.py',
        );
        expect(r.exitCode).toBe(0);
        expect(r.stdout).toBe('v2\n');
        expect(r.projectNotApplied).toBeUndefined();
        expect(tree(root)).toEqual(before);
        // The host's own edits show through.
        writeFileSync(join(root, 'host.txt'), 'h\n');
        expect((await sh(s, 'cat host.txt')).stdout).toBe('h\n');
        await s.stop();
        expect(await s.projectChanges()).toBeUndefined();
      },
      { config },
    );
    expect(tree(root)).toEqual([...before, 'host.txt'].sort());
    expect(readdirSync(join(config.logs.dir, OVERLAYS_FOLDER)).filter((n) => n !== 'spent')).toEqual([]);
  });
});

describe("the overlay's upper folder counts against the disk limit: it is on the host's disk, where no quota reaches", () => {
  for (const mount of ['scratch', 'rw'] as const)
    test.concurrent(`${mount}: many files under the per-file limit, over the disk limit together, are stopped and said`, async () => {
      const root = project();
      const config = loadConfig({
        cwd: root,
        env: {},
        overrides: { project: { mount }, limits: { disk: '64m' }, logs: { dir: join(tempDir('gcd-overlay-logs-'), 'logs') } },
      });
      await withManager(
        async (manager) => {
          const s = await manager.start({ image: PYTHON_IMAGE, project: mount });
          try {
            // 16 MiB files, each well under any per-file cap, 0.3 s apart: the limit (64 MiB) is
            // passed after four, and the loop runs on for 24 (a slower engine's kill still lands first).
            const r = await s.exec(
              'mkdir -p out && i=0; while [ $i -lt 24 ]; do i=$((i+1)); head -c 16777216 /dev/zero > out/f$i; sleep 0.3; done',
              {
                timeoutMs: 120_000,
              },
            );
            expect(r.diskLimitHit).toBe(true);
            expect(r.exitCode).not.toBe(0);
            // Sparse files hold almost no blocks, but applying (or keeping) one writes its full size.
            const sparse = await s.exec('rm -rf out; mkdir -p sp && for i in 1 2 3 4; do truncate -s 40M sp/s$i; done; sleep 4', {
              timeoutMs: 120_000,
            });
            expect(sparse.diskLimitHit).toBe(true);
          } finally {
            await s.stop();
          }
        },
        { config },
      );
    });
});

describe('the ends its owner does not see through: the exit hook, and a sweep after SIGKILL', () => {
  /** The volumes a process's containers left (Docker's go with them; Podman's are named ones of ours). */
  async function volumesOf(pid: number): Promise<string[]> {
    const out = await dockerOk(['volume', 'ls', '-q', '--filter', `label=genaicode-docker.owner=${hostname()}:${pid}`]);
    return out.split('\n').filter(Boolean);
  }

  async function ownerChild(mode: 'wait' | 'exit', root: string, logs: string, leaseSeconds?: number) {
    const { spawn } = await import('node:child_process');
    const args = [join(HERE, '../fixtures/overlay-owner-child.mjs'), mode, root, logs, ...(leaseSeconds ? [String(leaseSeconds)] : [])];
    const proc = spawn(process.execPath, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
    let out = '';
    let err = '';
    proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const line = await new Promise<string>((resolve, reject) => {
      proc.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
      });
      void exited.then(() => (out.includes('\n') ? undefined : reject(new Error(`the owner ended early: ${err}`))));
    });
    return { proc, exited, ...(JSON.parse(line) as { id: string; pid: number }) };
  }

  test.concurrent(
    'process.exit: the exit hook removes the container, then applies its overlay (the link and the FIFO never made)',
    async () => {
      const root = project();
      const logs = join(tempDir('gcd-overlay-logs-'), 'logs');
      const child = await ownerChild('exit', root, logs);
      expect(await child.exited).toBe(3);
      expect(readFileSync(join(root, 'late.txt'), 'utf8')).toBe('late\n');
      expect(tree(root).filter((p) => p.startsWith('late-'))).toEqual([]);
      expect(readdirSync(join(logs, OVERLAYS_FOLDER)).filter((n) => n !== 'spent')).toEqual([]);
      expect(await volumesOf(child.pid)).toEqual([]);
    },
    60_000,
  );

  test.concurrent(
    'SIGKILL: a later sweep removes the container, then applies what it left, with the same checks',
    async () => {
      const root = project();
      const logs = join(tempDir('gcd-overlay-logs-'), 'logs');
      const child = await ownerChild('wait', root, logs);
      child.proc.kill('SIGKILL');
      await child.exited;
      expect(existsSync(join(root, 'late.txt'))).toBe(false);
      await withManager(
        async (manager) => {
          const report = await manager.sweep();
          expect(report.removed.map((r) => r.id)).toContain(child.id);
          expect(report.overlays).toEqual([expect.objectContaining({ projectRoot: root, mode: 'rw', applied: 2 })]);
          // Podman's overlay is a named volume, which the sweep removes once its container is gone.
          expect(await volumesOf(child.pid)).toEqual([]);
        },
        { config: loadConfig({ cwd: root, env: {}, overrides: { project: { mount: 'rw' }, logs: { dir: logs } } }) },
      );
      expect(readFileSync(join(root, 'late.txt'), 'utf8')).toBe('late\n');
      expect(tree(root).filter((p) => p.startsWith('late-'))).toEqual([]);
    },
    60_000,
  );

  test.concurrent(
    'SIGKILL with no sweep: the container stops by itself once its lease runs out; the next sweep applies what it left',
    async () => {
      const root = project();
      const logs = join(tempDir('gcd-overlay-logs-'), 'logs');
      const child = await ownerChild('wait', root, logs, 6);
      // Renewed while its owner lives: still running after more than a lease.
      await new Promise((r) => setTimeout(r, 8000));
      expect((await inspectContainer(child.id))?.State.Running).toBe(true);
      child.proc.kill('SIGKILL');
      await child.exited;
      await waitFor(
        'the container to stop at its lease',
        async () => ((await inspectContainer(child.id)) ? undefined : true),
        30_000,
      ).catch(async (e: unknown) => {
        // What still runs in it, to tell why.
        const { docker } = await import('../../support/engine.js');
        throw new Error(`${String(e)}; processes: ${(await docker(['top', child.id])).stdout}`);
      });
      await withManager(
        async (manager) => {
          // The container removed itself: on Podman its overlay volume is still there for the sweep.
          expect(await volumesOf(child.pid)).toHaveLength(TEST_ENGINE === 'podman' ? 1 : 0);
          const report = await manager.sweep();
          expect(report.overlays).toEqual([expect.objectContaining({ projectRoot: root, mode: 'rw', applied: 2 })]);
          expect(await volumesOf(child.pid)).toEqual([]);
        },
        { config: loadConfig({ cwd: root, env: {}, overrides: { project: { mount: 'rw' }, logs: { dir: logs } } }) },
      );
      expect(readFileSync(join(root, 'late.txt'), 'utf8')).toBe('late\n');
    },
    90_000,
  );
});

describe('the lease while its owner lives', () => {
  test.concurrent(
    "commands cut short (their tree killed, the lease watch's looks caught in it) never end a container whose owner renews its lease",
    async () => {
      const root = project();
      const { SandboxManager } = await import('../../../src/index.js');
      // A short lease, so that its watch looks every second, yet long enough that a busy jest
      // worker (other tests' applies on this event loop) never renews it late by that much.
      const manager = new SandboxManager({ config: configFor(root), sweepOnStart: false, leaseSeconds: 8 });
      const s = await manager.start({ image: PYTHON_IMAGE, project: 'rw' });
      try {
        const until = Date.now() + 12_000;
        let cut = 0;
        // At least 12 s (the lease's watch looks every second) and at least 4 commands cut, however slow the engine.
        while (Date.now() < until || cut < 4) {
          const r = await s.exec('while :; do :; done', { timeoutMs: 300 });
          expect(r.timedOut).toBe(true);
          cut++;
        }
        expect(cut).toBeGreaterThan(3);
        expect((await s.exec('echo alive')).stdout).toBe('alive\n');
        expect((await inspectContainer(s.id))?.State.Running).toBe(true);
      } finally {
        await manager.stopAll();
      }
    },
    60_000,
  );
});

describe('the plugin as a user who is not root, with access to the engine (the usual case)', () => {
  test.concurrent(
    'files, deletions, an opaque folder applied; a link out and a FIFO refused; the root-made work folder kept once and reused',
    async () => {
      const root = project({ 'gone1.txt': 'g', 'gone2.txt': 'g', 'lib1/a.py': 'a', 'lib2/a.py': 'a' });
      const logs = tempDir('gcd-overlay-nonroot-logs-');
      const { spawnSync } = await import('node:child_process');
      const fixture = join(HERE, '../fixtures/overlay-nonroot-child.mjs');
      // As root, the fixture runs as the project's owner, with the engine socket's group (as `docker` gives a user).
      if (isRoot) chownSync(logs, DEV.uid, DEV.gid);
      const socket = process.env.DOCKER_HOST?.startsWith('unix://')
        ? process.env.DOCKER_HOST.slice('unix://'.length)
        : '/var/run/docker.sock';
      const socketGid = statSync(socket, { throwIfNoEntry: false })?.gid;
      const argv = isRoot
        ? ['setpriv', '--reuid', String(DEV.uid), '--regid', String(DEV.gid), `--groups=${socketGid ?? DEV.gid}`, process.execPath, fixture]
        : [process.execPath, fixture];
      const r = spawnSync(argv[0]!, [...argv.slice(1), root, join(logs, 'logs')], {
        encoding: 'utf8',
        timeout: 120_000,
        env: { ...process.env, NODE_OPTIONS: '' },
      });
      if (TEST_ENGINE === 'podman') {
        // Podman gives the upper folder to root at the first mount (podman-overlays.ts): refused, with why.
        expect(r.status).not.toBe(0);
        expect(r.stderr).toContain(
          "this process does not run as root (it could not clean up what the container wrote): mount it read-only ('ro') instead",
        );
        const overlays = join(logs, 'logs', OVERLAYS_FOLDER);
        expect(existsSync(overlays) ? readdirSync(overlays).filter((n) => n !== 'spent') : []).toEqual([]);
        return;
      }
      expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
      const out = JSON.parse(r.stdout) as {
        uid: number;
        results: Array<{ exitCode: number; changes: { created: string[]; deleted: string[]; warnings: string[] } }>;
        overlays: string[];
        project: string[];
      };
      expect(out.uid).not.toBe(0);
      for (const [i, res] of out.results.entries()) {
        const n = i + 1;
        expect(res.exitCode).toBe(0);
        expect(res.changes.created).toEqual([`lib${n}/c.py`, `made${n}.txt`]);
        expect(res.changes.deleted).toEqual([`gone${n}.txt`, `lib${n}/a.py`]);
        expect(res.changes.warnings.join('\n')).toMatch(new RegExp(`f${n}: a FIFO[^]*p${n}: an absolute link`));
      }
      expect(out.project).toEqual(['.genaicoderc', 'README.md', 'lib1', 'lib2', 'made1.txt', 'made2.txt', 'src']);
      // The kernel's work/work (root's) could not be removed by this user: one kept, and reused by the second overlay.
      expect(out.overlays.filter((n) => n !== 'spent')).toEqual([]);
      expect(readdirSync(join(logs, 'logs', OVERLAYS_FOLDER, 'spent')).length).toBeLessThanOrEqual(1);
    },
    150_000,
  );
});
