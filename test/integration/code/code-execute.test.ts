/**
 * codeExecute against a real engine (seed 003): Python and bash run exactly as written,
 * the time limit kills the snippet's whole tree, the memory limit is hit and named, the
 * host's files are out of sight, the root is read-only while /tmp works, the configured
 * mounts are read-only or written on the host, and state lives only in files.
 */
import { createHash } from 'node:crypto';
import { chownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildCodeAnswer } from '../../../src/code/code-answer.js';
import { CodeExecutor } from '../../../src/code/code-executor.js';
import { CodeExecutors } from '../../../src/code/code-executors.js';
import { ConversationContainers } from '../../../src/prompt/conversation-containers.js';
import type { ConfigInput } from '../../../src/config/config-schema.js';
import { engineSuite, inspectContainer, withManager } from '../../support/engine.js';
import { tempDir } from '../../support/temp-dirs.js';

engineSuite('code-execute');

/** Runs `fn` with an executor on a real engine; its containers are removed afterwards, whatever happens. */
async function withExecutor<T>(fn: (x: CodeExecutor) => Promise<T>, overrides: ConfigInput = {}): Promise<T> {
  return withManager(
    async (manager) => {
      const executor = new CodeExecutor({ manager });
      try {
        return await fn(executor);
      } finally {
        await executor.shutdown();
      }
    },
    { overrides },
  );
}

describe('snippets run exactly as written', () => {
  test('Python and bash, stdout and stderr apart, exit codes as results; one kept-alive container', async () => {
    await withExecutor(async (x) => {
      const py = await x.execute({
        language: 'python',
        code: 'import sys\nprint("out", 6 * 7)\nprint("err", file=sys.stderr)\nsys.exit(3)\n',
      });
      const sh = await x.execute({ language: 'bash', code: 'echo "bash $BASH_VERSION" | cut -c1-4; echo oops >&2; exit 5' });
      expect(py.result).toMatchObject({ exitCode: 3, stdout: 'out 42\n', stderr: 'err\n' });
      expect(sh.result).toMatchObject({ exitCode: 5, stdout: 'bash\n', stderr: 'oops\n' });
      expect([py.container, sh.container]).toEqual(['new', 'reused']);
      expect(sh.containerName).toBe(py.containerName);
    });
  });

  test('a megabyte of code full of quotes, heredoc markers and non-ASCII text arrives byte for byte', async () => {
    await withExecutor(async (x) => {
      const piece = `it's "quoted" \`back\` $HOME \\n EOF <<'EOF' ä€😀 '''\n`;
      const payload = piece.repeat(Math.ceil((1024 * 1024) / Buffer.byteLength(piece)));
      const sha = createHash('sha256').update(payload).digest('hex');
      // Python: the payload as a bytes literal in hex (so no quoting is needed), and its hash printed back.
      const py = await x.execute({
        language: 'python',
        code: `import hashlib\n# ${piece.replace(/\n/g, ' ')}\ndata = bytes.fromhex("${Buffer.from(payload).toString('hex')}")\nprint(hashlib.sha256(data).hexdigest())\n`,
      });
      expect(py.result.stdout.trim()).toBe(sha);
      // bash: a quoted heredoc carries the payload through unchanged.
      const sh = await x.execute({ language: 'bash', code: `sha256sum <<'PAYLOAD_END' | cut -d' ' -f1\n${payload}PAYLOAD_END\n` });
      expect(sh.result.stdout.trim()).toBe(createHash('sha256').update(`${payload}`).digest('hex'));
      expect(Buffer.byteLength(payload)).toBeGreaterThan(1024 * 1024 - 100);
    });
  });

  test('a snippet that reads stdin gets none: it cannot eat its own script', async () => {
    await withExecutor(async (x) => {
      const sh = await x.execute({
        language: 'bash',
        code: 'if read -r line; then echo "read: $line"; else echo "no input"; fi\necho after',
      });
      expect(sh.result.stdout).toBe('no input\nafter\n');
      const py = await x.execute({ language: 'python', code: 'import sys\nprint(repr(sys.stdin.read()))' });
      expect(py.result.stdout).toBe("''\n");
    });
  });
});

describe('limits', () => {
  test('an endless loop is stopped at its time limit, with everything it started', async () => {
    await withExecutor(async (x) => {
      const run = await x.execute({ language: 'bash', code: '(sleep 1000 &) ; setsid sleep 999 & while :; do :; done', timeoutSeconds: 2 });
      expect(run.result).toMatchObject({ exitCode: 124, timedOut: true });
      expect(run.result.reason).toMatch(/timed out after 2000 ms; its process tree was killed/);
      const left = await x.execute({
        language: 'bash',
        code: 'for p in /proc/[0-9]*; do cat "$p/cmdline" 2>/dev/null | tr "\\0" " "; echo; done | grep -c "^sleep 99" || true',
      });
      expect(left.result.stdout.trim()).toBe('0');
      const answer = await buildCodeAnswer(run, { maxOutputChars: 10_000 });
      expect(answer).toMatchObject({ exitCode: 124, timedOut: true, container: 'new' });
    });
  });

  test('nothing a snippet starts outlives its call: daemons, double forks and a process-limit flood are gone for the next one', async () => {
    await withExecutor(async (x) => {
      const flood = await x.execute({
        language: 'bash',
        code: "setsid bash -c 'while :; do sleep 100000 & done' </dev/null >/dev/null 2>&1 & sleep 1; echo started",
      });
      expect(flood.result.stdout).toBe('started\n');
      const daemon = await x.execute({
        language: 'python',
        code: 'import os, sys, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(1000)\n    os._exit(0)\nprint("forked")',
      });
      expect(daemon.result.stdout).toBe('forked\n');
      const next = await x.execute({
        language: 'bash',
        code: 'for p in /proc/[0-9]*; do tr "\\0" " " < "$p/cmdline"; echo; done | grep -c "^sleep 1000" || true',
      });
      expect(next.result).toMatchObject({ exitCode: 0, stdout: '0\n', pidsLimitHit: false });
      expect(next.container).toBe('reused');
    });
  });

  test('a full /tmp does not stop the next snippet from running', async () => {
    await withExecutor(async (x) => {
      const fill = await x.execute({
        language: 'python',
        code: "try:\n    open('/tmp/fill', 'wb').write(b'x' * (80 * 1024 * 1024))\nexcept OSError as e:\n    print('full', e.errno)",
      });
      expect(fill.result.stdout).toBe('full 28\n');
      const bash = await x.execute({ language: 'bash', code: 'echo still-runs' });
      expect(bash.result).toMatchObject({ exitCode: 0, stdout: 'still-runs\n' });
      const py = await x.execute({ language: 'python', code: 'print("py-runs")' });
      expect(py.result.stdout).toBe('py-runs\n');
    });
  });

  test('the memory limit is hit and named', async () => {
    await withExecutor(
      async (x) => {
        const run = await x.execute({
          language: 'python',
          code: 'blocks = []\nwhile True:\n    blocks.append(bytearray(16 * 1024 * 1024))\n',
        });
        expect(run.result.oomKilled).toBe(true);
        expect(run.result.exitCode).toBe(137);
        expect(run.result.reason).toMatch(/memory/);
      },
      { codeExecute: { memory: '64m' } },
    );
  });

  test('the container has the profile: 256 MiB, 1 CPU, read-only root, no network, no privilege', async () => {
    await withExecutor(async (x) => {
      const run = await x.execute({ language: 'python', code: 'print(1)' });
      const c = await inspectContainer(run.containerName);
      expect(c?.HostConfig).toMatchObject({
        Memory: 256 * 1024 ** 2,
        NanoCpus: 1e9,
        ReadonlyRootfs: true,
        Privileged: false,
        NetworkMode: 'none',
      });
      expect(c?.HostConfig.PidMode).not.toBe('host');
    });
  });
});

describe('isolation', () => {
  test("nothing of the host's file system is visible", async () => {
    const secret = join(tempDir(), 'host-secret.txt');
    writeFileSync(secret, 'host only');
    await withExecutor(async (x) => {
      const run = await x.execute({
        language: 'python',
        code: `import os\nprint(os.path.exists(${JSON.stringify(secret)}))\nprint(os.path.exists("/var/run/docker.sock"))\nprint(open("/etc/hostname").read().strip() == os.uname().nodename)`,
      });
      expect(run.result.stdout).toBe('False\nFalse\nTrue\n');
    });
  });

  test('the root refuses writes while /tmp works, and state between calls lives in /tmp files', async () => {
    await withExecutor(async (x) => {
      const write = await x.execute({ language: 'bash', code: 'touch /usr/x 2>&1; echo kept > /tmp/state.txt && echo tmp-ok' });
      expect(write.result.stdout).toMatch(/Read-only file system/);
      expect(write.result.stdout).toMatch(/tmp-ok/);
      const read = await x.execute({ language: 'python', code: 'print(open("/tmp/state.txt").read().strip())' });
      expect(read.result.stdout).toBe('kept\n');
      expect(read.container).toBe('reused');
    });
  });

  test('the configured mounts: skills read-only at /skills, output writable at /output and written on the host', async () => {
    const root = tempDir();
    const skills = join(root, 'skills');
    const output = join(root, 'output');
    mkdirSync(skills);
    mkdirSync(output);
    writeFileSync(join(skills, 'hello.sh'), 'echo skill-ran\n');
    // A writable mount runs as its folder's owner, never as root.
    chownSync(output, 1000, 1000);
    await withExecutor(
      async (x) => {
        const run = await x.execute({
          language: 'bash',
          code: 'bash /skills/hello.sh; touch /skills/new 2>&1 | grep -o "Read-only file system"; echo result > /output/out.txt && id -u',
        });
        expect(run.result.stdout).toBe('skill-ran\nRead-only file system\n1000\n');
      },
      {
        mountAllow: [{ hostPath: root, writable: true }],
        codeExecute: {
          mounts: [
            { hostPath: skills, containerPath: '/skills' },
            { hostPath: output, containerPath: '/output', writable: true },
          ],
        },
      },
    );
    expect(readFileSync(join(output, 'out.txt'), 'utf8')).toBe('result\n');
  });
});

describe('one-shot', () => {
  test('a fresh container per call, gone at its end: no state carries over', async () => {
    await withExecutor(
      async (x) => {
        const a = await x.execute({ language: 'bash', code: 'echo one > /tmp/s; hostname' });
        const b = await x.execute({ language: 'bash', code: 'cat /tmp/s 2>/dev/null || echo none; hostname' });
        expect([a.container, b.container]).toEqual(['new', 'new']);
        expect(b.result.stdout.split('\n')[0]).toBe('none');
        expect(a.result.stdout.split('\n')[0]).not.toBe(b.result.stdout.split('\n')[1]);
        expect(await inspectContainer(a.containerName)).toBeUndefined();
      },
      { codeExecute: { keepAlive: false } },
    );
  });
});

describe('a snippet cannot plant code another one imports', () => {
  // A module left in the working folder, where `python3 -` would import it from first.
  const PLANTS: Array<[string, string, string]> = [
    [
      'json.py',
      'open("json.py", "w").write("print(\'PLANTED\')\\ndumps = lambda v: \'forged\'\\n")',
      'import json\nprint(json.dumps([1]))',
    ],
    ['csv.py', 'open("csv.py", "w").write("import sys\\nprint(\'PLANTED\')\\nsys.exit(9)\\n")', 'import csv\nprint(csv.QUOTE_ALL)'],
    [
      'a package, base64/',
      'import os\nos.makedirs("base64", exist_ok=True)\nopen("base64/__init__.py", "w").write("print(\'PLANTED\')\\nb64encode = lambda b: b\'forged\'\\n")',
      'import base64\nprint(base64.b64encode(b"x").decode())',
    ],
  ];
  const EXPECTED: Record<string, string> = { 'json.py': '[1]\n', 'csv.py': '1\n', 'a package, base64/': 'eA==\n' };

  test.each(PLANTS)('%s: the next call of the same conversation imports the real module', async (name, plant, use) => {
    await withExecutor(async (x) => {
      expect((await x.execute({ language: 'python', code: plant })).result.exitCode).toBe(0);
      const r = await x.execute({ language: 'python', code: use });
      expect(r.container).toBe('reused');
      expect(r.result).toMatchObject({ exitCode: 0, stdout: EXPECTED[name] });
    });
  });

  test.each(PLANTS)(
    '%s: another conversation runs in a sandbox of its own, and each is removed when its conversation ends',
    async (name, plant, use) => {
      await withManager(async (manager) => {
        const executors = new CodeExecutors(() => new CodeExecutor({ manager }));
        const ends = new ConversationContainers(
          () => undefined,
          (c) => executors.end(c),
        );
        const first = {};
        const second = {};
        try {
          const planted = await executors.for(first).execute({ language: 'python', code: `${plant}\nimport os\nprint(os.listdir("."))` });
          expect(planted.result.stdout).toContain(name.includes('/') ? 'base64' : name);
          // The module in place, as `python3 -` would see it: what the next conversation must not get.
          const used = await executors.for(second).execute({ language: 'bash', code: `ls; python3 -c ${JSON.stringify(use)}` });
          expect(used.result.stdout).not.toContain('PLANTED');
          expect(used.containerName).not.toBe(planted.containerName);
          const py = await executors.for(second).execute({ language: 'python', code: use });
          expect(py.result).toMatchObject({ exitCode: 0, stdout: EXPECTED[name] });
          await ends.end(first);
          expect((await inspectContainer(planted.containerName))?.State.Running ?? false).toBe(false);
          expect((await inspectContainer(used.containerName))?.State.Running).toBe(true);
          expect(executors.size).toBe(1);
        } finally {
          await ends.end(first);
          await ends.end(second);
        }
      });
    },
  );
});
