/**
 * The mover of written files (files/file-mover.ts): one long-lived command in the
 * container that moves each staged file into place. What it must keep: one process however
 * many writes, no new command per write; a write still works after the container user
 * killed it, however (its own kill, a command's timeout that took it with the command's
 * tree, a kill in the middle of writes); and a `genaicode-docker cp` that ends leaves no
 * mover behind.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Sandbox } from '../../../src/index.js';
import { SandboxError } from '../../../src/errors.js';
import { DockerEngine } from '../../../src/engine/docker-engine.js';
import { FileMover } from '../../../src/files/file-mover.js';
import { CLI, requireBuiltPackage } from '../../support/built-package.js';
import { asRoot, docker, dockerOk, engineSuite, eventsOf, MINIMAL_IMAGE, waitFor, withManager } from '../../support/engine.js';
import { tempDir } from '../../support/temp-dirs.js';

engineSuite('file-mover');

/** The ids of the container's movers (`file-op serve` on their command line; this probe's own spells it apart). */
async function moverPids(sb: Sandbox): Promise<string[]> {
  const r = await sb.exec(
    `w=file-op; for d in /proc/[0-9]*; do c=$(tr '\\0' ' ' < "$d/cmdline" 2>/dev/null); case "$c" in *"$w serve"*) echo "\${d#/proc/}" ;; esac; done`,
  );
  return r.stdout.split('\n').filter(Boolean);
}

async function stagedLeft(sb: Sandbox): Promise<string> {
  return (await asRoot(sb.id, 'ls -A /workspace | grep "^.gcd-write-" || true')).trim();
}

test('one mover for every write: no new command in the container per write, and one process', async () => {
  await withManager(async (manager) => {
    const sb = await manager.start({ image: MINIMAL_IMAGE });
    await sb.writeFile('first.txt', 'one\n');
    await new Promise((r) => setTimeout(r, 300));
    const since = Date.now() / 1000;
    for (let i = 0; i < 6; i++) await sb.writeFile(`more/${i}.txt`, `${i}\n`);
    await Promise.all([0, 1, 2, 3].map((i) => sb.writeFile(`parallel/${i}.bin`, randomBytes(100_000 + i))));
    const until = Date.now() / 1000 + 0.2;
    const actions = (await eventsOf(sb.id, since, until)).map((e) => e.Action ?? e.status ?? '');
    expect(actions.filter((a) => a === 'extract-to-dir')).toHaveLength(10);
    expect(actions.filter((a) => a.startsWith('exec_create'))).toEqual([]);
    expect(await moverPids(sb)).toHaveLength(1);
    expect((await sb.exec('cat more/5.txt')).stdout).toBe('5\n');
    expect(await stagedLeft(sb)).toBe('');
  });
});

test('killed by the container user (SIGKILL, SIGTERM, SIGHUP): the next write starts a new one', async () => {
  await withManager(async (manager) => {
    const sb = await manager.start({ image: MINIMAL_IMAGE });
    for (const [i, kill] of ['kill -KILL', 'kill -TERM', 'kill -HUP'].entries()) {
      await sb.writeFile(`before-${i}.txt`, 'x');
      const [pid] = await moverPids(sb);
      expect(pid).toMatch(/^\d+$/);
      expect((await sb.exec(`${kill} ${pid}`)).exitCode).toBe(0);
      const r = await sb.writeFile(`after-${i}.txt`, `written after ${kill}\n`);
      expect(r).toMatchObject({ bytesWritten: `written after ${kill}\n`.length, created: true });
      expect((await sb.exec(`cat after-${i}.txt`)).stdout).toBe(`written after ${kill}\n`);
      const now = await moverPids(sb);
      expect(now).toHaveLength(1);
      expect(now).not.toContain(pid);
    }
    expect(await stagedLeft(sb)).toBe('');
  });
});

test("a command's timeout spares the mover, though it started after the command (an exec of its own, not the command's tree): writes go on through it", async () => {
  await withManager(async (manager) => {
    const sb = await manager.start({ image: MINIMAL_IMAGE });
    const running = sb.exec('sleep 60', { timeoutMs: 2_500 });
    await new Promise((r) => setTimeout(r, 500));
    await sb.writeFile('during.txt', 'during\n');
    const [pid] = await moverPids(sb);
    const ended = await running;
    expect(ended.timedOut).toBe(true);
    expect(await moverPids(sb)).toContain(pid);
    await sb.writeFile('after.txt', 'after\n');
    expect(await moverPids(sb)).toEqual([pid]);
    expect((await sb.exec('cat during.txt after.txt')).stdout).toBe('during\nafter\n');
  });
});

test('killed in the middle of writes: each write lands whole or fails with a FILE_OPERATION_FAILED, and nothing staged is left', async () => {
  await withManager(async (manager) => {
    const sb = await manager.start({ image: MINIMAL_IMAGE });
    await sb.writeFile('warm.txt', 'x');
    for (let round = 0; round < 3; round++) {
      const contents = Array.from({ length: 10 }, (_, i) => randomBytes(200_000 + i * 1000 + round));
      const writes = contents.map((c, i) =>
        sb.writeFile(`r${round}/f${i}.bin`, c).then(
          () => 'ok',
          (e: unknown) => e,
        ),
      );
      // Kill every mover a few times while the writes run.
      const killer = (async () => {
        for (let k = 0; k < 4; k++) {
          await new Promise((r) => setTimeout(r, 15 * k));
          for (const pid of await moverPids(sb)) await sb.exec(`kill -KILL ${pid}`);
        }
      })();
      const results = await Promise.all(writes);
      await killer;
      for (const [i, result] of results.entries()) {
        if (result === 'ok') {
          const back = await sb.readFileBytes(`r${round}/f${i}.bin`);
          expect(back.equals(contents[i]!)).toBe(true);
        } else {
          expect(result).toBeInstanceOf(SandboxError);
          expect((result as SandboxError).code).toBe('FILE_OPERATION_FAILED');
        }
      }
      expect(results.filter((r) => r === 'ok').length).toBeGreaterThan(0);
    }
    await sb.writeFile('last.txt', 'still writes\n');
    expect((await sb.exec('cat last.txt')).stdout).toBe('still writes\n');
    expect(await stagedLeft(sb)).toBe('');
  });
}, 120_000);

test("a process of the container user writing into the mover's input or output cannot make it write elsewhere, nor fill this process", async () => {
  await withManager(async (manager) => {
    const sb = await manager.start({ image: MINIMAL_IMAGE });
    const passwd = (await dockerOk(['exec', sb.id, 'cat', '/etc/passwd'])).toString();
    await sb.writeFile('a.txt', 'a\n');
    const [pid] = await moverPids(sb);
    // Requests of its own on the mover's input: the checks are the same as for ours.
    await sb.exec("printf 'x\\n' > /workspace/.gcd-write-0a");
    const injected = await sb.exec(
      `printf 'place 1 .gcd-write-0a /etc/passwd\\nplace 2 .gcd-write-0a /workspace/../etc/shadow\\ndiscard 3 ../../etc/passwd\\n' > /proc/${pid}/fd/0`,
    );
    expect(injected.exitCode).toBe(0);
    expect(await sb.writeFile('b.txt', 'b\n')).toMatchObject({ bytesWritten: 2, created: true });
    // Answers for ids nobody waits for are dropped.
    await sb.exec(`printf '77\\0000\\000new=1\\000' > /proc/${pid}/fd/1`);
    expect(await sb.writeFile('c.txt', 'c\n')).toMatchObject({ bytesWritten: 2, created: true });
    // A flood with no end of an answer: not kept; that mover is given up, a new one serves.
    // (The injected requests' answers and the forged one may have used up its allowance of
    // answers for nobody already: the mover is looked up again.)
    const [current] = await moverPids(sb);
    const flood = await sb.exec(`head -c 2000000 /dev/zero | tr '\\0' A > /proc/${current}/fd/1`);
    expect(flood.exitCode).toBe(0);
    expect(await sb.writeFile('d.txt', 'd\n')).toMatchObject({ bytesWritten: 2, created: true });
    expect(await moverPids(sb)).not.toContain(current);
    // A flood of NULs (an answer every three bytes, for nobody): that mover is given up at once.
    const [next] = await moverPids(sb);
    const started = Date.now();
    await sb.exec(`head -c 20000000 /dev/zero > /proc/${next}/fd/1`);
    expect(await sb.writeFile('e.txt', 'e\n')).toMatchObject({ bytesWritten: 2, created: true });
    // Well under the mover's 60 s request timeout: the flood did not hold the write.
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(await moverPids(sb)).not.toContain(next);
    expect((await sb.exec('cat b.txt c.txt d.txt e.txt')).stdout).toBe('b\nc\nd\ne\n');
    expect((await dockerOk(['exec', sb.id, 'cat', '/etc/passwd'])).toString()).toBe(passwd);
    expect((await docker(['exec', sb.id, 'test', '-e', '/etc/shadow'])).code).not.toBe(0);
  });
});

test('the container killed in the middle of writes: each lands or fails with CONTAINER_NOT_FOUND, none hangs', async () => {
  await withManager(async (manager) => {
    for (const warm of [false, true]) {
      const sb = await manager.start({ image: MINIMAL_IMAGE });
      if (warm) await sb.writeFile('warm.txt', 'x');
      const writes = Array.from({ length: 6 }, (_, i) =>
        sb.writeFile(`f${i}.bin`, randomBytes(4 * 1024 * 1024)).then(
          () => 'ok',
          (e: unknown) => (e instanceof SandboxError ? e.code : String(e)),
        ),
      );
      await new Promise((r) => setTimeout(r, 30));
      await docker(['kill', sb.id]);
      const outcomes = await Promise.all(writes);
      for (const o of outcomes) expect(['ok', 'CONTAINER_NOT_FOUND']).toContain(o);
      await sb.stop();
    }
  });
}, 60_000);

describe('as a user other than root (1000:1000): what the engine does as root cannot be turned on other files', () => {
  const asUser = { overrides: { user: '1000:1000' } };

  test('a staged copy swapped for a link while the engine extracts it: the file it leads to is never loosened', async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ image: MINIMAL_IMAGE });
      await asRoot(sb.id, 'echo secret > /etc/secret && chmod 640 /etc/secret && chmod 777 /workspace');
      // The swapper: each staged copy it sees is renamed away and replaced by a link to the secret.
      const swapper = sb.exec(
        'n=0; while [ ! -e /workspace/stop ]; do for f in /workspace/.gcd-write-*; do [ -f "$f" ] && [ ! -L "$f" ] && mv "$f" /workspace/stolen 2>/dev/null && ln -s /etc/secret "$f" && n=$((n+1)); done; done; echo "swapped $n"',
        { timeoutMs: 120_000 },
      );
      const big = randomBytes(16 * 1024 * 1024);
      for (let i = 0; i < 6; i++) {
        await sb.writeFile(`big-${i}.bin`, big).catch((e: unknown) => expect(e).toBeInstanceOf(SandboxError));
        expect((await sb.exec('cat /etc/secret')).exitCode).not.toBe(0);
      }
      await sb.exec('touch /workspace/stop');
      const swapped = Number(/swapped (\d+)/.exec((await swapper).stdout)?.[1]);
      expect(swapped).toBeGreaterThan(0);
      const mode = (await dockerOk(['exec', '-u', '0', sb.id, 'stat', '-c', '%a %u', '/etc/secret'])).trim();
      expect(['640 0', '600 0']).toContain(mode);
    }, asUser);
  }, 180_000);

  test("a staged copy that is not the user's own (a greeting forged into the mover's output names root) is refused", async () => {
    await withManager(async (manager, config) => {
      const sb = await manager.start({ image: MINIMAL_IMAGE });
      const mover = new FileMover(new DockerEngine(config.engine), sb.id, '/workspace');
      expect(await mover.userIds('rooted.txt')).toEqual({ uid: 1000, gid: 1000 });
      await asRoot(sb.id, 'chmod 777 /workspace && echo x > /workspace/.gcd-write-0b && chmod 600 /workspace/.gcd-write-0b');
      const refused = await mover.place('.gcd-write-0b', '/workspace/rooted.txt');
      expect(refused.code).toBe(6);
      expect(refused.text).toMatch(/owned by 0:0, not by the container user \(1000:1000\)/);
      expect((await sb.exec('ls -A /workspace')).stdout).toBe('');
      await sb.exec('echo mine > .gcd-write-0c && chmod 600 .gcd-write-0c');
      expect(await mover.place('.gcd-write-0c', '/workspace/mine.txt')).toEqual({ code: 0, text: 'new=1' });
      expect((await sb.exec('stat -c "%a %u:%g" mine.txt; cat mine.txt')).stdout).toBe('644 1000:1000\nmine\n');
    }, asUser);
  });
});

describe('genaicode-docker cp', () => {
  beforeAll(() => requireBuiltPackage(CLI));

  function cli(args: string[]): { status: number | null; stdout: string; stderr: string; ms: number } {
    const started = Date.now();
    const r = spawnSync(process.execPath, [CLI, ...args], {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, XDG_STATE_HOME: tempDir('gcd-cp-state-'), XDG_CONFIG_HOME: tempDir('gcd-cp-config-') },
    });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr, ms: Date.now() - started };
  }

  test('both ways, byte for byte; the paths the file actions refuse are refused; it exits at once and leaves no mover', async () => {
    await withManager(async (manager) => {
      const sb = await manager.start({ image: MINIMAL_IMAGE });
      const dir = tempDir('gcd-cp-');
      const bytes = randomBytes(2 * 1024 * 1024 + 3);
      writeFileSync(join(dir, 'in.bin'), bytes);
      const put = cli(['cp', join(dir, 'in.bin'), `${sb.name}:deep/er/in.bin`]);
      expect(put).toMatchObject({ status: 0, stderr: '' });
      expect(put.stdout).toMatch(/copied 2097155 bytes to .*:\/workspace\/deep\/er\/in\.bin \(new\)/);
      // The mover's connection closed with the process: it ends with its input.
      await waitFor('the mover to end with its input', async () => ((await moverPids(sb)).length === 0 ? true : undefined), 5_000);
      const get = cli(['cp', `${sb.name}:/workspace/deep/er/in.bin`, join(dir, 'out.bin')]);
      expect(get.status).toBe(0);
      expect(readFileSync(join(dir, 'out.bin')).equals(bytes)).toBe(true);
      for (const target of ['/etc/passwd', '../etc/passwd', 'deep/../../etc/x']) {
        const refused = cli(['cp', join(dir, 'in.bin'), `${sb.name}:${target}`]);
        expect(refused.status).toBe(1);
        expect(refused.stderr).toMatch(/POLICY_VIOLATION|outside/);
      }
      await sb.exec('ln -s /etc leak');
      const viaLink = cli(['cp', join(dir, 'in.bin'), `${sb.name}:leak/evil`]);
      expect(viaLink.status).toBe(1);
      expect(viaLink.stderr).toMatch(/POLICY_VIOLATION|outside/);
      expect((await docker(['exec', sb.id, 'test', '-e', '/etc/evil'])).code).not.toBe(0);
      // Well under the request timeout: nothing held the process open.
      expect(put.ms).toBeLessThan(20_000);
    });
  }, 120_000);
});
