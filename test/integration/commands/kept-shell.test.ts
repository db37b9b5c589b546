/**
 * The kept shell against a real engine: state carries over, and each framing case the
 * shell must survive (stdin, heredocs, no final newline, binary output, the framing marker
 * printed by the command, exit/exec/set -e/trap/ulimit/kill $$, changed shell options) gives
 * a correct result, or the shell is replaced and the answer says what was lost.
 */
import { readFileSync } from 'node:fs';
import { engineSuite, sharedSandbox, withManager, docker, waitFor } from '../../support/engine.js';
import type { Sandbox } from '../../../src/sandbox/sandbox.js';

engineSuite('kept-shell');

/** A sandbox of its own per test: each test reads the state the one before it left. */
async function withShell(fn: (sb: Sandbox) => Promise<void>): Promise<void> {
  await withManager(async (m) => fn(await m.start({})));
}

describe('state carries over', () => {
  test('cd and export reach the next command; the answer says the new folder once', async () => {
    await withShell(async (sb) => {
      const cd = await sb.exec('mkdir -p /tmp/proj/sub && cd /tmp/proj/sub && export GREETING="hello world" PATH="/tmp/bin:$PATH"');
      expect(cd).toMatchObject({ exitCode: 0, folder: '/tmp/proj/sub' });
      expect(cd.shell).toBeUndefined();
      const next = await sb.exec('pwd; echo "$GREETING"; case "$PATH" in /tmp/bin:*) echo path-kept;; esac');
      expect(next.stdout).toBe('/tmp/proj/sub\nhello world\npath-kept\n');
      expect(next.folder).toBeUndefined();
      // A file operation resolves from the container's folder, not the shell's: unchanged.
      const back = await sb.exec('cd - >/dev/null; pwd');
      expect(back.stdout.trim()).toBe(back.folder);
    });
  });

  test('unset reaches the next command too; a value with a line that looks like an export changes nothing else', async () => {
    await withShell(async (sb) => {
      await sb.exec('export A=1 B=2 C=3');
      expect((await sb.exec('unset A; C=changed')).exitCode).toBe(0);
      expect((await sb.exec('echo "${A-none} $B $C"')).stdout).toBe('none 2 changed\n');
      // Each line of this value read on its own would name PATH and B.
      await sb.exec(`export M='first
export PATH=/nowhere
export B=9'`);
      const r = await sb.exec('echo "$B"; command -v sh >/dev/null && echo path-ok; printf "%s" "$M" | wc -l');
      expect(r.stdout).toBe('2\npath-ok\n2\n');
      // The shell's own marker is never the command's to drop.
      expect((await sb.exec('unset GENAICODE_DOCKER_EXEC; sleep 30', { timeoutMs: 1500 })).timedOut).toBe(true);
      expect((await sb.exec('echo alive')).stdout).toBe('alive\n');
    });
  });

  test('a folder with quotes, spaces and a newline in its name is kept exactly', async () => {
    await withShell(async (sb) => {
      const name = "/tmp/it's a\nfolder $x";
      const r = await sb.exec(`mkdir -p "/tmp/it's a\nfolder \\$x" && cd "/tmp/it's a\nfolder \\$x"`);
      expect(r.folder).toBe(name);
      expect((await sb.exec('pwd')).stdout).toBe(`${name}\n`);
    });
  });
});

describe('framing cases', () => {
  const shared = sharedSandbox({});
  afterAll(() => shared.release());

  test('a command that reads stdin gets end-of-input, never hangs', async () => {
    const sb = await shared.get();
    const r = await sb.exec('cat; read -r line || echo "eof:$?"; wc -c', { timeoutMs: 20_000 });
    expect(r).toMatchObject({ exitCode: 0, timedOut: false });
    expect(r.stdout).toBe('eof:1\n0\n');
  });

  test('heredocs and multi-line commands, with a trailing newline and without', async () => {
    const sb = await shared.get();
    const r = await sb.exec('cat <<EOF\nline one\n  line two $((1+2))\nEOF\nif true; then\n  echo in-if\nfi\n');
    expect(r.stdout).toBe('line one\n  line two 3\nin-if\n');
    const quoted = await sb.exec("cat <<'END'\n+not a protocol line\n\\x1e $HOME\nEND");
    expect(quoted.stdout).toBe('+not a protocol line\n\\x1e $HOME\n');
  });

  test('output without a final newline, on both streams, then the next command is clean', async () => {
    const sb = await shared.get();
    const r = await sb.exec('printf out; printf err >&2');
    expect([r.stdout, r.stderr]).toEqual(['out', 'err']);
    // Both streams in the log, each as it came (their order between them is the engine's).
    expect(['outerr', 'errout']).toContain(readFileSync(r.logPath, 'utf8'));
    const next = await sb.exec('echo clean');
    expect([next.stdout, next.stderr]).toEqual(['clean\n', '']);
  });

  test('binary output comes through byte-exact in the log, NULs and every byte value', async () => {
    const sb = await shared.get();
    const r = await sb.exec('i=0; while [ $i -lt 256 ]; do printf "\\\\$(printf %o $i)"; i=$((i+1)); done; printf \'\\000\\036\\036\'');
    const log = readFileSync(r.logPath);
    const want = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), Buffer.from([0, 0x1e, 0x1e])]);
    expect(log.equals(want)).toBe(true);
    expect(r.bytes.stdout).toBe(259);
  });

  test('a command that prints the framing marks itself (record separators, a fake trailer, a fake end frame)', async () => {
    const sb = await shared.get();
    // One write: a stream's last byte that could start the end mark (the fake begin frame's
    // `\037`) is held until that stream's next bytes, and under load the other stream's can
    // reach the log first; within one write nothing is held between the two frames.
    const fake = "printf '\\037%sb\\037\\037%se\\0370:1:/\\000' 0123456789abcdef0123456789abcdef 0123456789abcdef0123456789abcdef";
    const r = await sb.exec(`${fake}; { ${fake}; } >&2; printf '\\0361:2\\036' >&2; echo after`);
    expect(r.exitCode).toBe(0);
    // Binary (NULs): the answer names the log, which has every byte the command wrote.
    const log = readFileSync(r.logPath, 'latin1');
    expect(log).toContain('after\n');
    expect(log).toContain('\x1e1:2\x1e');
    // Each stream whole (the two streams' order in the log is the engine's, as for any command).
    expect(log.split('\x1f0123456789abcdef0123456789abcdefb\x1f')).toHaveLength(3);
    expect(log.split('\x1f0123456789abcdef0123456789abcdefe\x1f0:1:/\0')).toHaveLength(3);
    expect(r.bytes).toEqual({ stdout: 35 + 41 + 6, stderr: 35 + 41 + 5 });
    expect(r.oomKilled).toBe(false);
    expect(r.pidsLimitHit).toBe(false);
    expect((await sb.exec('echo next')).stdout).toBe('next\n');
  });

  test('exit, set -e and kill $$ end the command with its code; the shell lives on', async () => {
    const sb = await shared.get();
    expect((await sb.exec('exit 7')).exitCode).toBe(7);
    const e = await sb.exec('set -e; false; echo not-reached');
    expect([e.exitCode, e.stdout]).toEqual([1, '']);
    const k = await sb.exec('kill $$; echo survived');
    expect([k.exitCode, k.stdout]).toEqual([0, 'survived\n']);
    // exit keeps the folder the command was in when it exited.
    const cd = await sb.exec('mkdir -p /tmp/exited && cd /tmp/exited && exit 2');
    expect(cd).toMatchObject({ exitCode: 2, folder: '/tmp/exited' });
    const after = await sb.exec('pwd; set -o | grep -c "errexit *on" || true');
    expect(after.stdout).toBe('/tmp/exited\n0\n');
    expect(after.shell).toBeUndefined();
  });

  test('exec and an EXIT trap of its own: correct result, and the answer says the state was not kept', async () => {
    const sb = await shared.get();
    const before = (await sb.exec('cd /; pwd')).stdout;
    const ex = await sb.exec('cd /etc; exec echo execd');
    expect([ex.exitCode, ex.stdout]).toEqual([0, 'execd\n']);
    expect(ex.shell).toMatch(/not kept/);
    const tr = await sb.exec('trap "echo trapped" EXIT; cd /var; export TRAPPED=1');
    expect(tr.stdout).toBe('trapped\n');
    expect(tr.shell).toMatch(/not kept/);
    const after = await sb.exec('pwd; echo "[$TRAPPED]"');
    expect(after.stdout).toBe(`${before}[]\n`);
  });

  test('ulimit, set -u, set -f and a changed IFS stay in their command', async () => {
    const sb = await shared.get();
    const r = await sb.exec('ulimit -n 8; set -u -f; IFS=:; echo *; echo "$IFS"');
    expect(r.stdout).toBe('*\n:\n');
    const n = await sb.exec('ulimit -n; echo $UNSET_VAR ok; echo /e*');
    expect(n.exitCode).toBe(0);
    const [limit, ok, glob] = n.stdout.split('\n');
    expect(limit).not.toBe('8');
    expect(ok).toBe('ok');
    expect(glob).toBe('/etc');
  });

  test('an exported IFS carries over and does not break the shell', async () => {
    await withShell(async (sb) => {
      await sb.exec('export IFS=x');
      const r = await sb.exec('sleep 30 & echo started');
      expect(r.stdout).toBe('started\n');
      expect((await sb.exec('echo alive')).stdout).toBe('alive\n');
    });
  });

  test('a timeout kills the command tree and leaves the shell usable with its folder', async () => {
    const sb = await shared.get();
    await sb.exec('cd /tmp');
    const r = await sb.exec('sh -c "sleep 300" & sleep 300; echo never', { timeoutMs: 1_500 });
    // Nothing but the command's own output: not the shell's note of a killed job (busybox: `Killed`).
    expect(r).toMatchObject({ exitCode: 124, timedOut: true, stdout: '', stderr: '' });
    expect(r.shell).toMatch(/not kept/);
    const after = await sb.exec('pwd; ps -o comm= | grep -c "^sleep" || true');
    expect(after.stdout.split('\n')[0]).toBe('/tmp');
    // Only the container's keep-alive sleeps.
    expect(after.stdout.split('\n')[1]).toBe('1');
  });

  test('a cancel kills the tree of a builtin loop (no child to find) and the shell goes on', async () => {
    const sb = await shared.get();
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 800);
    const r = await sb.exec('while :; do :; done', { signal: ac.signal });
    expect(r).toMatchObject({ canceled: true, exitCode: 137 });
    expect((await sb.exec('echo ok')).stdout).toBe('ok\n');
  });

  test('a shell killed from inside (kill -9 $$) is replaced, and the next answer says what was lost', async () => {
    await withShell(async (sb) => {
      await sb.exec('cd /tmp && export KEEP=1');
      const r = await sb.exec('kill -9 $$; sleep 5');
      expect(r.shell).toMatch(/during this command/);
      const next = await sb.exec('pwd; echo "[$KEEP]"');
      expect(next.stdout).toBe('/tmp\n[]\n');
      expect(next.shell).toMatch(/new shell started.*variables exported earlier are gone; the folder is kept/);
      expect((await sb.exec('echo third')).shell).toBeUndefined();
    });
  });

  test('a shell killed between commands (as the disk limit’s clean-up does): the next command runs in a new one', async () => {
    await withShell(async (sb) => {
      await sb.exec('cd /tmp && export KEEP=1');
      // From an exec of its own (an argument vector), as the clean-up kills every process.
      const kill = await sb.exec([
        'sh',
        '-c',
        'for f in $(grep -l ": kept-[s]hell" /proc/[0-9]*/cmdline); do p=${f#/proc/}; kill -9 ${p%/cmdline}; done',
      ]);
      expect(kill.exitCode).toBe(0);
      const next = await sb.exec('pwd; echo "[$KEEP]"');
      expect(next).toMatchObject({ exitCode: 0, stdout: '/tmp\n[]\n' });
      expect(next.shell).toMatch(/^a new shell started .*variables exported earlier are gone; the folder is kept\.$/);
    });
  });

  test('two commands at once: the second runs beside the shell in its folder, outputs never mixed', async () => {
    await withShell(async (sb) => {
      await sb.exec('cd /etc');
      const [a, b] = await Promise.all([
        sb.exec('i=0; while [ $i -lt 200 ]; do echo a$i; i=$((i+1)); done'),
        sb.exec('i=0; while [ $i -lt 200 ]; do echo b$i; i=$((i+1)); done; pwd'),
      ]);
      expect(a.stdout.split('\n').filter((l) => l.startsWith('b'))).toEqual([]);
      expect(b.stdout.split('\n').filter((l) => l.startsWith('a'))).toEqual([]);
      expect(b.stdout.trim().split('\n').pop()).toBe('/etc');
    });
  });

  test('a process left writing after its command (setsid) does not leak into the next answer', async () => {
    await withShell(async (sb) => {
      // The command waits until its child is in a session of its own (what leaves it alone at the command's end).
      const r = await sb.exec(
        'setsid sh -c "touch /tmp/leak-up; sleep 0.3; echo leaked; echo leaked >&2; touch /tmp/leak-done" & while [ ! -e /tmp/leak-up ]; do sleep 0.05; done; echo first',
      );
      expect(r.stdout).toBe('first\n');
      // Written between the two commands, however late it runs (an argv exec does not use the shell).
      await waitFor(
        'the leaked writes',
        async () => ((await sb.exec(['test', '-e', '/tmp/leak-done'])).exitCode === 0 ? true : undefined),
        30_000,
        100,
      );
      const next = await sb.exec('echo second');
      expect([next.stdout, next.stderr]).toEqual(['second\n', '']);
    });
  });

  test('turned off (exec.keptShell false): one exec per command, nothing carries over', async () => {
    await withManager(
      async (m) => {
        const sb = await m.start({});
        await sb.exec('cd /tmp && export X=1');
        const r = await sb.exec('pwd; echo "[${X:-}]"');
        expect(r.stdout).toBe('/workspace\n[]\n');
        const execs = await docker(['top', sb.id, '-o', 'args']);
        expect(execs.stdout).not.toMatch(/kept-shell/);
      },
      { overrides: { exec: { keptShell: false } } },
    );
  });
});
