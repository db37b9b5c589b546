/**
 * How a file gets into a container (seed 002): through the engine's archive API, never on a
 * command line, staged in the working folder and moved into place by the container user.
 * What that must not change: permissions are still the container user's (the engine writes
 * as root), commands running meanwhile are not disturbed, nothing staged is left behind,
 * and a read-only root's working folder (on Docker a tmpfs volume, which its archive API
 * reaches, unlike a tmpfs mount; on Podman a tmpfs mount, which its archive API reaches)
 * keeps its size cap and goes with the container.
 */
import { randomBytes } from 'node:crypto';
import {
  asRoot,
  docker,
  dockerOk,
  engineSuite,
  eventsOf,
  MINIMAL_IMAGE,
  newTestSessionId,
  TEST_ENGINE,
  withManager,
} from '../../support/engine.js';
import { LABEL } from '../../../src/sandbox/labels.js';
import { sandboxError } from '../../support/sandbox-error.js';

engineSuite('archive-writes');

test('a write is an archive extraction: the engine reports extract-to-dir, and no command line carries the content', async () => {
  await withManager(async (manager) => {
    const sb = await manager.start({ image: MINIMAL_IMAGE });
    const marker = `content-${randomBytes(8).toString('hex')}`;
    const since = Date.now() / 1000 - 1;
    await sb.writeFile('notes/plan.txt', `${marker}\n`);
    await sb.editFile('notes/plan.txt', marker, `${marker}-edited`);
    const until = Date.now() / 1000 + 1;
    expect((await sb.readFile('notes/plan.txt')).text).toBe(`${marker}-edited\n`);
    if (TEST_ENGINE === 'docker') {
      // Docker's events name each archive extraction and each exec's command line (Podman's do not).
      const actions = (await eventsOf(sb.id, since, until)).map((e) => e.Action ?? e.status ?? '');
      expect(actions.filter((a) => a === 'extract-to-dir')).toHaveLength(2);
      // Exec events carry the command line: the content is on none of them.
      const execs = actions.filter((a) => a.startsWith('exec_create'));
      expect(execs.length).toBeGreaterThan(0);
      for (const a of execs) expect(a).not.toContain('content-');
    }
    expect((await sb.exec('ls -A /workspace')).stdout).toBe('notes\n');
  });
});

test('the engine writes as root, but only what the container user may: a root-owned folder or read-only file is refused', async () => {
  await withManager(
    async (manager) => {
      const sb = await manager.start({ image: MINIMAL_IMAGE });
      // As root (without capabilities: what it makes is simply root's), beside the sandbox's own user:
      // a folder the user may not write, a file it may not change in a folder it may.
      await asRoot(sb.id, 'chmod 1777 /workspace && mkdir /workspace/roots');
      await sb.exec('mkdir mine && chmod 777 mine');
      await asRoot(sb.id, 'echo root > /workspace/mine/locked && chmod 444 /workspace/mine/locked');
      const inRoots = await sandboxError(() => sb.writeFile('roots/new.txt', 'x'));
      expect(inRoots).toMatchObject({ code: 'FILE_OPERATION_FAILED', data: { reason: 'cannot write' } });
      expect(inRoots.message).toMatch(/not writable by the container user/);
      const locked = await sandboxError(() => sb.writeFile('mine/locked', 'changed'));
      expect(locked).toMatchObject({ code: 'FILE_OPERATION_FAILED', data: { reason: 'cannot write' } });
      const editLocked = await sandboxError(() => sb.editFile('mine/locked', 'root', 'mine'));
      expect(editLocked.code).toBe('FILE_OPERATION_FAILED');
      const listed = await asRoot(sb.id, 'ls -A /workspace/roots; cat /workspace/mine/locked; ls -A /workspace');
      // Nothing written, nothing staged left behind.
      expect(listed).toBe('root\nmine\nroots\n');
      // What the user may write is written, and is the user's.
      expect(await sb.writeFile('mine/new.txt', 'ok\n')).toMatchObject({ created: true, bytesWritten: 3 });
      expect((await sb.exec('stat -c "%u:%g %a" mine/new.txt')).stdout.trim()).toBe('1000:1000 644');
    },
    { overrides: { user: '1000:1000' } },
  );
});

test('commands running while files are written go on; writes and commands in parallel all succeed', async () => {
  await withManager(async (manager) => {
    const sb = await manager.start({ image: MINIMAL_IMAGE });
    const counter = sb.exec('i=0; while [ $i -lt 400 ]; do i=$((i+1)); echo $i > /tmp/count; sleep 0.005; done; echo done', {
      timeoutMs: 60_000,
    });
    const results = await Promise.all([
      ...Array.from({ length: 12 }, (_, i) => sb.writeFile(`par/f${i}.txt`, `file ${i}\n`).then((r) => r.bytesWritten)),
      ...Array.from({ length: 12 }, (_, i) => sb.exec(`echo run ${i}`).then((r) => (r.exitCode === 0 ? r.stdout.length : -1))),
    ]);
    expect(results.every((n) => n > 0)).toBe(true);
    expect((await counter).stdout.trim()).toBe('done');
    const listing = await sb.listDirectory('par');
    expect(listing.entries.map((e) => e.path).sort()).toEqual(Array.from({ length: 12 }, (_, i) => `f${i}.txt`).sort());
    expect((await sb.exec('ls -A /workspace')).stdout).toBe('par\n');
  });
});

test('a read-only root: the working folder is a tmpfs volume the archive API reaches, capped, nosuid and nodev, removed with the container', async () => {
  const sessionId = newTestSessionId();
  await withManager(
    async (manager) => {
      const sb = await manager.start({ image: MINIMAL_IMAGE, readOnlyRoot: true, tmpfsBytes: 2 * 1024 * 1024 });
      const bytes = randomBytes(1024 * 1024);
      expect(await sb.writeFile('blob.bin', bytes)).toMatchObject({ created: true, bytesWritten: bytes.length });
      expect((await sb.readFileBytes('blob.bin')).equals(bytes)).toBe(true);
      const mount = (await sb.exec("grep ' /workspace ' /proc/mounts")).stdout;
      expect(mount).toMatch(/ tmpfs /);
      expect(mount).toMatch(/nosuid/);
      expect(mount).toMatch(/nodev/);
      // The size cap holds for the engine's writes too.
      const full = await sandboxError(() => sb.writeFile('more.bin', randomBytes(1536 * 1024)));
      expect(full.code).toBe('FILE_OPERATION_FAILED');
      expect(full.message).toMatch(/no space left/);
      // The half-written staged copy is removed: the space is free again.
      expect((await sb.exec('ls -A /workspace')).stdout).toBe('blob.bin\n');
      expect(await sb.writeFile('small.txt', 'fits\n')).toMatchObject({ created: true });
      // Outside the working folder the root stays read-only, for the archive API as for commands.
      expect((await sandboxError(() => sb.writeFile('/etc/x', 'x'))).code).toBe('POLICY_VIOLATION');
      // Docker: a labelled anonymous volume; Podman: a tmpfs mount (its API ignores a volume's driver options).
      const volumes = await dockerOk(['volume', 'ls', '-q', '--filter', `label=${LABEL.session}=${sessionId}`]);
      expect(volumes.trim().split('\n').filter(Boolean)).toHaveLength(TEST_ENGINE === 'docker' ? 1 : 0);
      await sb.stop();
      const after = await docker(['volume', 'ls', '-q', '--filter', `label=${LABEL.session}=${sessionId}`]);
      expect(after.stdout.trim()).toBe('');
    },
    { sessionId },
  );
});

test('the working folder itself is not a file: reading, copying or writing it is INVALID_ARGUMENT, said so', async () => {
  await withManager(async (manager) => {
    const sb = await manager.start({ image: MINIMAL_IMAGE });
    for (const path of ['.', '/workspace', '/workspace/', 'a/..']) {
      for (const op of [() => sb.readFile(path), () => sb.readFileBytes(path), () => sb.writeFile(path, 'x')]) {
        const e = await sandboxError(() => op());
        expect(e.code).toBe('INVALID_ARGUMENT');
        expect(e.message).toMatch(/names the working folder, not a file/);
      }
    }
  });
});
