/**
 * The mover of written files (sandbox/file-mover.ts): one long-lived command in the
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
import type { Sandbox } from '../../src/index.js';
import { SandboxError } from '../../src/errors.js';
import { CLI, requireBuiltPackage } from '../support/built-package.js';
import { docker, dockerOk, engineSuite, eventsOf, MINIMAL_IMAGE, waitFor, withManager } from '../support/engine.js';
import { tempDir } from '../support/temp-dirs.js';

engineSuite('file-mover');

/** The ids of the container's movers (`file-op serve` on their command line; this probe's own spells it apart). */
async function moverPids(sb: Sandbox): Promise<string[]> {
  const r = await sb.exec(
    `w=file-op; for d in /proc/[0-9]*; do c=$(tr '\\0' ' ' < "$d/cmdline" 2>/dev/null); case "$c" in *"$w serve"*) echo "\${d#/proc/}" ;; esac; done`,
  );
  return r.stdout.split('\n').filter(Boolean);
}

async function stagedLeft(sb: Sandbox): Promise<string> {
  return (await dockerOk(['exec', '-u', '0', sb.id, 'sh', '-c', 'ls -A /workspace | grep "^.gcd-write-" || true'])).trim();
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

test("a command's timeout that takes the mover with the command's tree (it started after the command) does not break writes", async () => {
  await withManager(async (manager) => {
    const sb = await manager.start({ image: MINIMAL_IMAGE });
    const running = sb.exec('sleep 60', { timeoutMs: 2_500 });
    await new Promise((r) => setTimeout(r, 500));
    await sb.writeFile('during.txt', 'during\n');
    const [pid] = await moverPids(sb);
    const ended = await running;
    expect(ended.timedOut).toBe(true);
    await waitFor('the mover killed with the command', async () => ((await moverPids(sb)).includes(pid!) ? undefined : true), 5_000);
    await sb.writeFile('after.txt', 'after\n');
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
    const flood = await sb.exec(`head -c 2000000 /dev/zero | tr '\\0' A > /proc/${pid}/fd/1`);
    expect(flood.exitCode).toBe(0);
    expect(await sb.writeFile('d.txt', 'd\n')).toMatchObject({ bytesWritten: 2, created: true });
    expect(await moverPids(sb)).not.toContain(pid);
    expect((await sb.exec('cat b.txt c.txt d.txt')).stdout).toBe('b\nc\nd\n');
    expect((await dockerOk(['exec', sb.id, 'cat', '/etc/passwd'])).toString()).toBe(passwd);
    expect((await docker(['exec', sb.id, 'test', '-e', '/etc/shadow'])).code).not.toBe(0);
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
