/**
 * Files inside a container against a real engine (seed 002), in a busybox image and a
 * Debian one: exact bytes both ways, odd names, ranges and caps, listings, the
 * single-occurrence edit, and every way out of the working folder refused: `..`, absolute
 * paths, symlinks to /etc, and a folder swapped for a symlink while we write.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { engineSuite, MINIMAL_IMAGE, PYTHON_IMAGE, withManager } from '../../support/engine.js';
import { tempDir } from '../../support/temp-dirs.js';
import type { Sandbox } from '../../../src/sandbox/sandbox.js';
import { SandboxError } from '../../../src/errors.js';
import { sandboxError } from '../../support/sandbox-error.js';

engineSuite('container-files');

describe.each([MINIMAL_IMAGE, PYTHON_IMAGE])('in %s', (image) => {
  async function withSandbox(fn: (sb: Sandbox) => Promise<void>): Promise<void> {
    await withManager(async (manager) => fn(await manager.start({ image })));
  }

  test('a 5 MB binary file round-trips byte for byte; a read describes it instead of dumping it', async () => {
    await withSandbox(async (sb) => {
      const bytes = randomBytes(5 * 1024 * 1024);
      expect(await sb.writeFile('data/blob.bin', bytes)).toEqual({
        path: '/workspace/data/blob.bin',
        bytesWritten: bytes.length,
        created: true,
      });
      expect((await sb.readFileBytes('data/blob.bin')).equals(bytes)).toBe(true);
      const read = await sb.readFile('data/blob.bin');
      expect(read).toMatchObject({ binary: true, totalBytes: bytes.length, text: '' });
      expect(read.note).toMatch(/binary file \(5242880 bytes\): not shown/);
    });
  });

  test('file names with spaces, quotes, newlines and non-ASCII characters', async () => {
    await withSandbox(async (sb) => {
      const name = `dir with space/it's "quoted" $HOME\`x\`\nline ü😀.txt`;
      expect((await sb.writeFile(name, 'odd\n')).created).toBe(true);
      expect((await sb.readFile(name)).text).toBe('odd\n');
      expect((await sb.listDirectory('dir with space')).entries).toEqual([
        { path: `it's "quoted" $HOME\`x\`\nline ü😀.txt`, type: 'file', size: 4 },
      ]);
    });
  });

  test('ranges and caps: the lines asked, the totals, and a note of what was left out', async () => {
    await withSandbox(async (sb) => {
      const lines = Array.from({ length: 5000 }, (_, i) => `line ${i + 1}`).join('\n');
      await sb.writeFile('big.txt', lines); // no newline at the end
      const r = await sb.readFile('big.txt', { startLine: 100, endLine: 102 });
      expect(r).toMatchObject({ startLine: 100, endLine: 102, totalLines: 5000, text: 'line 100\nline 101\nline 102\n' });
      expect(r.note).toBeUndefined();
      const capped = await sb.readFile('big.txt', { maxLines: 10 });
      expect(capped).toMatchObject({ startLine: 1, endLine: 10 });
      expect(capped.note).toMatch(/lines 11-5000 not shown/);
      const bytes = await sb.readFile('big.txt', { startLine: 1, endLine: 5000, maxBytes: 1024 });
      expect(Buffer.byteLength(bytes.text)).toBeLessThanOrEqual(1024);
      expect(bytes.note).toMatch(/cut at 1024 bytes/);
      expect((await sb.readFile('big.txt', { startLine: 4999 })).text).toBe('line 4999\nline 5000');
    });
  });

  test('a listing is bounded in depth and count, with a note when cut', async () => {
    await withSandbox(async (sb) => {
      await sb.exec('mkdir -p a/b/c/d && touch a/b/c/d/deep && for i in $(seq 1 30); do touch a/f$i; done');
      const one = await sb.listDirectory('a');
      expect(one.entries.map((e) => e.path)).toContain('b');
      expect(one.entries.map((e) => e.path)).not.toContain('b/c');
      const deep = await sb.listDirectory('.', { depth: 10 });
      expect(deep.entries.some((e) => e.path === 'a/b/c/d/deep')).toBe(true);
    });
  });

  test('an edit replaces exactly one occurrence, and says how many there were otherwise', async () => {
    await withSandbox(async (sb) => {
      await sb.writeFile('app.py', 'x = 1\nprint(x)\nprint(x)\n');
      await sb.editFile('app.py', 'x = 1', 'x = 2');
      expect((await sb.readFile('app.py')).text).toBe('x = 2\nprint(x)\nprint(x)\n');
      const many = await sandboxError(() => sb.editFile('app.py', 'print(x)', 'pass'));
      expect(many).toMatchObject({ code: 'INVALID_ARGUMENT', data: { occurrences: 2 } });
      expect(many.message).toMatch(/occurs 2 times/);
      expect((await sandboxError(() => sb.editFile('app.py', 'nothing', 'x'))).data).toEqual({ occurrences: 0 });
    });
  });

  test('`..`, absolute paths elsewhere and symlinks that lead out are refused, reading and writing', async () => {
    await withSandbox(async (sb) => {
      await sb.exec('ln -s /etc etclink; ln -s /etc/passwd pw; mkdir -p sub; ln -s ../../etc sub/up');
      for (const path of ['../etc/passwd', '/etc/passwd', 'etclink/passwd', 'pw', 'sub/up/passwd']) {
        expect({ path, read: (await sandboxError(() => sb.readFile(path))).code }).toEqual({ path, read: 'POLICY_VIOLATION' });
        expect({ path, write: (await sandboxError(() => sb.writeFile(path, 'x'))).code }).toEqual({ path, write: 'POLICY_VIOLATION' });
      }
      expect((await sandboxError(() => sb.listDirectory('etclink'))).code).toBe('POLICY_VIOLATION');
      expect((await sandboxError(() => sb.writeFile('etclink/new-dir/evil', 'x'))).code).toBe('POLICY_VIOLATION');
      // Nothing was written through them.
      expect((await sb.exec('ls /etc/evil /etc/new-dir 2>&1; head -c 5 /etc/passwd')).stdout).toMatch(
        /No such file[\s\S]*No such file[\s\S]*root:/,
      );
    });
  });

  test('a working folder swapped for a link to /etc is refused, for every operation', async () => {
    await withSandbox(async (sb) => {
      await sb.exec('mv /workspace /ws0 && ln -s /etc /workspace');
      for (const op of [
        () => sb.readFile('passwd'),
        () => sb.writeFile('pwned', 'x'),
        () => sb.listDirectory('.'),
        () => sb.readFileBytes('passwd'),
      ]) {
        expect((await sandboxError(() => op())).code).toBe('POLICY_VIOLATION');
      }
      expect((await sb.exec('ls /etc/pwned 2>&1 || true')).stdout).toMatch(/No such file/);
    });
  });

  test('a name that flips to a link to a folder outside while we write: the write never lands outside', async () => {
    await withSandbox(async (sb) => {
      const flipper = sb.exec('while [ ! -e /tmp/stop-flip ]; do ln -s /etc /workspace/t 2>/dev/null; rm -f /workspace/t; done', {
        timeoutMs: 60_000,
      });
      for (let i = 0; i < 40; i++) await sb.writeFile('t', `x${i}\n`).catch(() => undefined);
      await sb.exec('touch /tmp/stop-flip');
      await flipper;
      expect((await sb.exec('ls -a /etc | grep -c gcd-write || true')).stdout.trim()).toBe('0');
    });
  });

  test('temp names planted as links to a pipe or /dev/null take nothing: the content lands in the file', async () => {
    await withSandbox(async (sb) => {
      await sb.exec(
        // The old name was .gcd-write.<pid>: plant the pids the next execs will get (each ln takes one).
        'n=$$; i=$((n + 1500)); while [ $i -le $((n + 3000)) ]; do ln -s /dev/null /workspace/.gcd-write.$i; i=$((i+1)); done',
      );
      expect(await sb.writeFile('a.txt', 'SECRET\n')).toMatchObject({ created: true });
      expect((await sb.readFile('a.txt')).text).toBe('SECRET\n');
      expect((await sb.exec('[ -L /workspace/a.txt ] && echo link || echo file')).stdout).toBe('file\n');
    });
  });

  test('a pipe or a device is not read (no hang): FILE_OPERATION_FAILED, wrong type', async () => {
    await withSandbox(async (sb) => {
      await sb.exec('mkfifo /workspace/fifo');
      const started = Date.now();
      for (const op of [() => sb.readFile('fifo'), () => sb.readFileBytes('fifo')]) {
        expect(await sandboxError(() => op())).toMatchObject({ code: 'FILE_OPERATION_FAILED', data: { reason: 'wrong type' } });
      }
      // Nothing hung on the pipe (a read of it would wait for good).
      expect(Date.now() - started).toBeLessThan(30_000);
    });
  });

  test('an edit keeps the file mode and owner; a long line cut mid-character is still text', async () => {
    await withSandbox(async (sb) => {
      await sb.exec('printf "#!/bin/sh\\necho one\\n" > run.sh && chmod 750 run.sh && chown 1234:1234 run.sh');
      await sb.editFile('run.sh', 'echo one', 'echo two');
      expect((await sb.exec('stat -c %a:%u:%g run.sh; ./run.sh')).stdout).toBe('750:1234:1234\ntwo\n');
      await sb.writeFile('long.txt', 'é'.repeat(100));
      const r = await sb.readFile('long.txt', { maxBytes: 51 });
      expect(r.binary).toBe(false);
      expect(r.text).toBe('é'.repeat(25));
    });
  });

  test('a write over an existing file keeps its mode and owner, whichever of them differs from a new file', async () => {
    await withSandbox(async (sb) => {
      const me = (await sb.exec('id -u; id -g')).stdout.trim().split('\n').join(':');
      await sb.exec('for f in mode owner both same; do echo old > $f; done; chmod 600 mode; chmod 755 both; chmod 644 owner both same');
      await sb.exec('chmod 700 both && chown 4321:4321 owner both');
      for (const f of ['mode', 'owner', 'both', 'same']) expect(await sb.writeFile(f, `new ${f}\n`)).toMatchObject({ created: false });
      expect((await sb.exec('stat -c "%n %a %u:%g" mode owner both same; cat mode owner both same')).stdout).toBe(
        `mode 600 ${me}\nowner 644 4321:4321\nboth 700 4321:4321\nsame 644 ${me}\nnew mode\nnew owner\nnew both\nnew same\n`,
      );
    });
  });

  test('a folder swapped for a symlink to /etc while we write cannot lead the write out', async () => {
    await withSandbox(async (sb) => {
      await sb.exec('mkdir -p race');
      // A process in the container swaps race/ for a symlink to /etc and back, as fast as it can.
      const swapper = sb.exec(
        'while [ ! -e /tmp/stop-swapping ]; do mv race race.d 2>/dev/null; ln -s /etc race 2>/dev/null; rm -f race; mv race.d race 2>/dev/null; done',
        { timeoutMs: 60_000 },
      );
      const outcomes = new Set<string>();
      for (let i = 0; i < 40; i++) {
        try {
          await sb.writeFile(`race/raced-${i}`, 'x');
          outcomes.add('written inside');
        } catch (e) {
          outcomes.add(e instanceof SandboxError ? e.code : String(e));
        }
      }
      await sb.exec('touch /tmp/stop-swapping');
      await swapper;
      expect([...outcomes].every((o) => ['written inside', 'POLICY_VIOLATION', 'FILE_OPERATION_FAILED'].includes(o))).toBe(true);
      expect((await sb.exec('ls /etc | grep -c raced || true')).stdout.trim()).toBe('0');
    });
  });
});

test('a write into a read-only place is refused with a clear error', async () => {
  const ro = tempDir();
  chmodSync(ro, 0o755); // a rootless engine runs as another user here: it reads the folder as anyone may
  mkdirSync(join(ro, 'sub'));
  writeFileSync(join(ro, 'sub', 'kept.txt'), 'kept\n');
  await withManager(
    async (manager) => {
      const sb = await manager.start({ image: MINIMAL_IMAGE, mounts: [{ hostPath: ro, containerPath: '/workspace/ro' }] });
      expect((await sb.readFile('ro/sub/kept.txt')).text).toBe('kept\n');
      const e = await sandboxError(() => sb.writeFile('ro/sub/new.txt', 'x'));
      expect(e).toMatchObject({ code: 'FILE_OPERATION_FAILED', data: { reason: 'cannot write' } });
      expect(e.message).toMatch(/read-only/);
    },
    { overrides: { mountAllow: [{ hostPath: ro }] } },
  );
});

test('containerPrefix names the containers', async () => {
  await withManager(
    async (manager) => {
      const sb = await manager.start({ image: MINIMAL_IMAGE });
      expect(sb.name).toMatch(/^coding-agent-[0-9a-f]{6}-1$/);
    },
    { overrides: { containerPrefix: 'coding-agent-' } },
  );
});
