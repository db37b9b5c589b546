import { jest } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ContainerEngine, ExecSession, ExecSpec, StreamId } from '../../../src/engine/container-engine.js';
import { openExecStream } from '../../../src/engine/exec-stream.js';
import { SandboxError } from '../../../src/errors.js';
import { FileMover } from '../../../src/files/file-mover.js';
import { AnswerReader, escapePath, MAX_ANSWER_BYTES, type MoverAnswer } from '../../../src/files/mover-protocol.js';
import { sandboxError } from '../../support/sandbox-error.js';

/** What the mover's `printf '%bx'` makes of an escaped path (only \0ooo escapes are ever sent). */
function printfB(escaped: string): Buffer {
  const out: number[] = [];
  for (let i = 0; i < escaped.length; i++) {
    if (escaped[i] === '\\') {
      expect(escaped.slice(i, i + 5)).toMatch(/^\\0[0-7]{3}$/);
      out.push(parseInt(escaped.slice(i + 2, i + 5), 8));
      i += 4;
    } else out.push(escaped.charCodeAt(i));
  }
  return Buffer.from(out);
}

describe('escapePath: a path on one request line, whatever its name', () => {
  test.each([
    '/workspace/app.py',
    '/workspace/with space/and "quotes" and \'single\'',
    '/workspace/new\nline\r\tand\\backslash',
    '/workspace/ünïcødé/日本語/😀.txt',
    '/workspace/%s%n%b/-dash/$(x)/`y`/;|&',
  ])('%j: one field of safe characters, decoded to the same bytes', (path) => {
    const e = escapePath(path);
    expect(e).toMatch(/^[A-Za-z0-9._/\\-]+$/);
    expect(printfB(e).equals(Buffer.from(path, 'utf8'))).toBe(true);
  });
});

describe('AnswerReader: answers cut anywhere by the stream', () => {
  const stream = Buffer.from(
    '0\u00000\u00001000 1000\u00007\u00000\u0000new=1\n\u00008\u00006\u0000cannot write /w/a b\n(read-only)\u00009\u0000x\u0000\u0000',
  );
  const expected: Array<[number, MoverAnswer]> = [
    [0, { code: 0, text: '1000 1000' }],
    [7, { code: 0, text: 'new=1' }],
    [8, { code: 6, text: 'cannot write /w/a b\n(read-only)' }],
    [9, { code: -1, text: '' }],
  ];

  test('whole, and split at every byte', () => {
    for (let cut = 0; cut <= stream.length; cut++) {
      const got: Array<[number, MoverAnswer]> = [];
      const r = new AnswerReader((id, a) => got.push([id, a]));
      r.push(stream.subarray(0, cut));
      r.push(stream.subarray(cut));
      expect(got).toEqual(expected);
    }
  });

  test('output that never ends a field (written into it by a process in the container) is not kept: overflow, once', () => {
    const got: number[] = [];
    let overflows = 0;
    const r = new AnswerReader(
      (id) => got.push(id),
      () => overflows++,
    );
    r.push(Buffer.from('0\u00000\u00001000 1000\u0000'));
    for (let i = 0; i < 40; i++) r.push(Buffer.alloc(4096, 'A'));
    expect(overflows).toBe(1);
    r.push(Buffer.from('\u00000\u0000new=1\u0000'));
    expect(got).toEqual([0]);
    expect(overflows).toBe(1);
    expect(MAX_ANSWER_BYTES).toBeLessThan(40 * 4096);
  });

  test('a byte at a time', () => {
    const got: Array<[number, MoverAnswer]> = [];
    const r = new AnswerReader((id, a) => got.push([id, a]));
    for (const b of stream) r.push(Buffer.from([b]));
    expect(got).toEqual(expected);
  });
});

/**
 * An engine whose execs are scripted movers: each gets the request lines and answers (or
 * ends) as `behave` says. Only `exec` is used by the mover.
 */
function moverEngine(
  behave: (n: number, line: string) => string | 'end' | 'silent',
  options: { greet?: string; startError?: Error; junk?: number } = {},
) {
  const execs: ExecSpec[] = [];
  const requests: string[] = [];
  const engine = {
    running: true,
    async inspectContainer(id: string) {
      return {
        id,
        name: id,
        running: this.running,
        status: this.running ? 'running' : 'exited',
        oomKilled: false,
        exitCode: null,
        labels: {},
      };
    },
    async exec(_id: string, spec: ExecSpec, onOutput: (s: StreamId, c: Buffer) => void): Promise<ExecSession> {
      if (options.startError) throw options.startError;
      execs.push(spec);
      const n = execs.length;
      let finish!: (v: { exitCode: number | null }) => void;
      const done = new Promise<{ exitCode: number | null }>((r) => (finish = r));
      onOutput('stdout', Buffer.from(`0\u00000\u0000${options.greet ?? '1000 1001'}\u0000`));
      void (async () => {
        let pending = '';
        for await (const chunk of spec.stdin as AsyncIterable<Buffer>) {
          pending += chunk.toString('utf8');
          let nl: number;
          while ((nl = pending.indexOf('\n')) !== -1) {
            const line = pending.slice(0, nl);
            pending = pending.slice(nl + 1);
            requests.push(line);
            if (options.junk && n === 1)
              for (let j = 0; j < options.junk; j++) onOutput('stdout', Buffer.from(`99\u00000\u0000forged\u0000`));
            const how = behave(n, line);
            if (how === 'end') return finish({ exitCode: 137 });
            if (how !== 'silent') onOutput('stdout', Buffer.from(`${line.split(' ')[1]}\u0000${how}\u0000`));
          }
        }
        finish({ exitCode: 0 });
      })();
      return { done, detach: () => undefined };
    },
  };
  return { engine: engine as unknown as ContainerEngine, execs, requests, setRunning: (r: boolean) => (engine.running = r) };
}

describe('FileMover: one long-lived mover, replaced when it ends', () => {
  test("the user's ids from its greeting; a request is a line, its answer the exit code and text; one command for many", async () => {
    const { engine, execs, requests } = moverEngine(() => '0\u0000new=1');
    const mover = new FileMover(engine, 'c1', '/workspace');
    expect(await mover.userIds('x')).toEqual({ uid: 1000, gid: 1001 });
    expect(await mover.place('.gcd-write-ab12', '/workspace/a b.txt')).toEqual({ code: 0, text: 'new=1' });
    await mover.discard('.gcd-write-ab12', 'a b.txt');
    expect(execs).toHaveLength(1);
    expect(execs[0]!.cmd.slice(-3)).toEqual(['file-op', 'serve', '/workspace']);
    expect(execs[0]!.background).toBe(true);
    expect(requests).toEqual([
      expect.stringMatching(/^place [1-9]\d* \.gcd-write-ab12 \/workspace\/a\\0040b\.txt$/),
      expect.stringMatching(/^discard [1-9]\d* \.gcd-write-ab12$/),
    ]);
    // Unguessable ids, not a count: an answer to a request a container process wrote in
    // (`place 1 …`, `place 2 …`) is never taken for one of ours.
    const ids = requests.map((r) => Number(r.split(' ')[1]));
    expect(ids.every((id) => id > 1_000_000)).toBe(true);
    expect(ids[0]).not.toBe(ids[1]);
  });

  test("a write's staged copy is owned by the ids the host gave the container, whatever the mover's greeting says", async () => {
    const { ContainerFiles } = await import('../../../src/files/container-files.js');
    const { extract } = await import('tar-stream');
    const limits = { maxReadBytes: 1 << 20, maxReadLines: 1000, maxWriteBytes: 1 << 20, maxListEntries: 100, maxListDepth: 3 };
    for (const [hostIds, owner] of [
      [
        { uid: 1000, gid: 1000 },
        { uid: 1000, gid: 1000 },
      ],
      [undefined, { uid: 0, gid: 0 }],
    ] as const) {
      // A process of the container user forged the greeting: it names root.
      const { engine: base } = moverEngine(() => '0\u0000new=1', { greet: '0 0' });
      const headers: Array<Record<string, unknown>> = [];
      const engine = Object.assign(Object.create(base) as ContainerEngine, {
        statPath: async () => ({ type: 'dir' as const, size: 0 }),
        extractArchive: async (_id: string, _path: string, archive: Buffer | AsyncIterable<Buffer>) => {
          const ex = extract();
          ex.on('entry', (h, stream, next) => {
            headers.push({ ...h });
            stream.resume();
            stream.on('end', () => next());
          });
          const done = new Promise<void>((r) => ex.on('finish', () => r()));
          const chunks: Buffer[] = [];
          for await (const chunk of archive as AsyncIterable<Buffer>) chunks.push(chunk);
          ex.end(Buffer.concat(chunks));
          await done;
        },
      });
      const files = new ContainerFiles(engine, 'c1', '/workspace', limits, hostIds);
      await files.writeFile('a.txt', 'x');
      expect(headers[0]).toMatchObject(owner);
    }
  });

  test('ended before answering: the request goes once more to a new mover', async () => {
    const { engine, execs, requests } = moverEngine((n) => (n === 1 ? 'end' : '0\u0000new=0'));
    const mover = new FileMover(engine, 'c1', '/workspace');
    expect(await mover.place('.gcd-write-01', '/workspace/x')).toEqual({ code: 0, text: 'new=0' });
    expect(execs).toHaveLength(2);
    expect(requests).toEqual([
      expect.stringMatching(/^place \d+ \.gcd-write-01 \/workspace\/x$/),
      expect.stringMatching(/^place \d+ \.gcd-write-01 \/workspace\/x$/),
    ]);
    // The new one stays for the next request.
    await mover.place('.gcd-write-02', '/workspace/y');
    expect(execs).toHaveLength(2);
  });

  test('ended twice: FILE_OPERATION_FAILED, saying it stopped; the next request starts another', async () => {
    let ends = 2;
    const { engine, execs } = moverEngine(() => (ends-- > 0 ? 'end' : '0\u0000new=1'));
    const mover = new FileMover(engine, 'c1', '/workspace');
    const e = await sandboxError(() => mover.place('.gcd-write-01', '/workspace/x', 'x'));
    expect(e).toMatchObject({ code: 'FILE_OPERATION_FAILED', data: { path: 'x', reason: 'failed' } });
    expect(e.message).toMatch(/file mover in the container stopped: it ended \(exit 137\)/);
    expect(await mover.place('.gcd-write-02', '/workspace/x')).toEqual({ code: 0, text: 'new=1' });
    expect(execs).toHaveLength(3);
  });

  test('answers nobody asked for: a few are dropped; more end that mover, and the request goes to a new one', async () => {
    const few = moverEngine(() => '0\u0000new=1', { junk: 3 });
    expect(await new FileMover(few.engine, 'c1', '/workspace').place('.gcd-write-01', '/workspace/x')).toEqual({ code: 0, text: 'new=1' });
    expect(few.execs).toHaveLength(1);
    const many = moverEngine(() => '0\u0000new=1', { junk: 4 });
    expect(await new FileMover(many.engine, 'c1', '/workspace').place('.gcd-write-01', '/workspace/x')).toEqual({ code: 0, text: 'new=1' });
    expect(many.execs).toHaveLength(2);
  });

  test('ended twice because the container stopped: CONTAINER_NOT_FOUND', async () => {
    const { engine, setRunning } = moverEngine(() => 'end');
    setRunning(false);
    const e = await sandboxError(() => new FileMover(engine, 'c1', '/workspace').place('.gcd-write-01', '/workspace/x'));
    expect(e).toMatchObject({ code: 'CONTAINER_NOT_FOUND', data: { containerId: 'c1' } });
  });

  test('ended twice while a kill is still under way (the container shows running a moment longer): CONTAINER_NOT_FOUND', async () => {
    const { engine, setRunning } = moverEngine(() => 'end');
    const inspect = engine.inspectContainer.bind(engine);
    let asked = 0;
    engine.inspectContainer = async (id: string) => {
      if (++asked === 2) setRunning(false);
      return inspect(id);
    };
    const e = await sandboxError(() => new FileMover(engine, 'c1', '/workspace').place('.gcd-write-01', '/workspace/x'));
    expect(e).toMatchObject({ code: 'CONTAINER_NOT_FOUND', data: { containerId: 'c1' } });
    expect(asked).toBe(2);
  });

  test('ended twice while the container keeps running: the wait for it to stop is on the clock given, then FILE_OPERATION_FAILED', async () => {
    const { engine } = moverEngine(() => 'end');
    let now = 0;
    const slept: number[] = [];
    const clock = {
      now: () => now,
      sleep: async (ms: number) => {
        slept.push(ms);
        now += ms;
      },
    };
    const e = await sandboxError(() => new FileMover(engine, 'c1', '/workspace', clock).place('.gcd-write-01', '/workspace/x'));
    expect(e).toMatchObject({ code: 'FILE_OPERATION_FAILED', data: { path: '/workspace/x', reason: 'failed' } });
    // Asked every 100 ms for 2 s of the fake clock's time, none of it real.
    expect(slept.reduce((a, b) => a + b, 0)).toBe(2_000);
    expect(slept.every((ms) => ms === 100)).toBe(true);
  });

  test("the engine's own error when it cannot start one (the container is gone), not a retry's", async () => {
    const gone = new SandboxError('CONTAINER_NOT_FOUND', 'Container c1 no longer exists.', { data: { containerId: 'c1' } });
    const { engine } = moverEngine(() => 'end', { startError: gone });
    const mover = new FileMover(engine, 'c1', '/workspace');
    expect(await sandboxError(() => mover.userIds('x'))).toBe(gone);
    expect(await sandboxError(() => mover.place('.gcd-write-01', '/workspace/x'))).toBe(gone);
  });

  test('a greeting that is not two ids is an error, not ids', async () => {
    const { engine } = moverEngine(() => '0\u0000', { greet: 'uid=root' });
    const e = await sandboxError(() => new FileMover(engine, 'c1', '/workspace').userIds('x'));
    expect(e).toMatchObject({ code: 'FILE_OPERATION_FAILED', data: { path: 'x', reason: 'failed' } });
    expect(e.message).toMatch(/"uid=root"/);
  });

  test('a mover that never answers is given up after a minute, and replaced', async () => {
    jest.useFakeTimers();
    try {
      const { engine, execs } = moverEngine((n) => (n === 1 ? 'silent' : '0\u0000new=1'));
      const mover = new FileMover(engine, 'c1', '/workspace');
      await mover.userIds('x');
      const stuck = sandboxError(() => mover.place('.gcd-write-01', '/workspace/x', 'x'));
      await jest.advanceTimersByTimeAsync(60_001);
      const e = await stuck;
      expect(e).toMatchObject({ code: 'FILE_OPERATION_FAILED', data: { path: 'x', reason: 'timed out' } });
      expect(await mover.place('.gcd-write-02', '/workspace/x')).toEqual({ code: 0, text: 'new=1' });
      expect(execs).toHaveLength(2);
    } finally {
      jest.useRealTimers();
    }
  });
});

describe("openExecStream: a stream as a command's stdin", () => {
  const dir = mkdtempSync(join(tmpdir(), 'exec-stdin-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('written as it comes, in order; its end is the end of input', async () => {
    const path = join(dir, 'engine.sock');
    const received: Buffer[] = [];
    let halfClosed!: () => void;
    const ended = new Promise<void>((r) => (halfClosed = r));
    const server = net.createServer({ allowHalfOpen: true }, (socket) => {
      let head = '';
      let streaming = false;
      socket.on('data', (chunk: Buffer) => {
        if (streaming) return void received.push(chunk);
        head += chunk.toString('latin1');
        const end = head.indexOf('\r\n\r\n');
        if (end === -1 || head.length < end + 4 + Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0)) return;
        streaming = true;
        socket.write('HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\n');
      });
      socket.on('end', () => {
        halfClosed();
        socket.end();
      });
    });
    await new Promise<void>((r) => server.listen(path, r));
    try {
      let next!: (v: string | undefined) => void;
      const lines = (async function* () {
        for (;;) {
          const line = await new Promise<string | undefined>((r) => (next = r));
          if (line === undefined) return;
          yield Buffer.from(line);
        }
      })();
      const stream = await openExecStream({ kind: 'net', options: { path }, hostHeader: 'localhost' }, 'x', () => undefined, {
        stdin: lines,
        background: true,
      });
      for (const line of ['place 1 a\n', 'place 2 b\n', 'discard 3 c\n']) {
        await new Promise((r) => setTimeout(r, 5));
        next(line);
      }
      await new Promise((r) => setTimeout(r, 5));
      next(undefined);
      await ended;
      expect(Buffer.concat(received).toString()).toBe('place 1 a\nplace 2 b\ndiscard 3 c\n');
      await stream.ended;
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
