import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { ExecStartError, openExecStream, type EngineTransport } from '../../../src/engine/exec-stream.js';
import { frame } from '../../support/frames.js';

/**
 * A stand-in engine speaking the exec-start side of the Docker API on a real socket:
 * it reads one request, then writes `script` piece by piece (each piece a separate write,
 * after the previous one was flushed), then ends or resets the connection.
 */
interface Script {
  pieces: Array<string | Buffer>;
  finish?: 'end' | 'reset' | 'hold';
}

interface Served {
  request: string;
}

const dir = mkdtempSync(join(tmpdir(), 'exec-stream-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function serve(server: net.Server, script: Script, served: Served[]): void {
  server.on(server instanceof tls.Server ? 'secureConnection' : 'connection', (socket: net.Socket) => {
    let request = '';
    socket.on('data', async (chunk: Buffer) => {
      request += chunk.toString('latin1');
      const headEnd = request.indexOf('\r\n\r\n');
      if (headEnd === -1) return;
      const length = Number(/content-length: (\d+)/i.exec(request)?.[1] ?? 0);
      if (request.length < headEnd + 4 + length) return;
      served.push({ request });
      for (const piece of script.pieces) {
        await new Promise<void>((r) => socket.write(piece, () => r()));
        await new Promise((r) => setTimeout(r, 5));
      }
      if (script.finish === 'reset') socket.resetAndDestroy();
      else if (script.finish !== 'hold') socket.end();
    });
    socket.on('error', () => undefined);
  });
}

let socketCount = 0;
async function unixEngine(script: Script): Promise<{ transport: EngineTransport; served: Served[]; close: () => Promise<void> }> {
  const path = join(dir, `engine-${++socketCount}.sock`);
  const served: Served[] = [];
  const server = net.createServer();
  serve(server, script, served);
  await new Promise<void>((r) => server.listen(path, r));
  return {
    transport: { kind: 'net', options: { path }, hostHeader: 'localhost' },
    served,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

async function tcpEngine(script: Script): Promise<{ transport: EngineTransport; served: Served[]; close: () => Promise<void> }> {
  const served: Served[] = [];
  const server = net.createServer();
  serve(server, script, served);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  return {
    transport: { kind: 'net', options: { host: '127.0.0.1', port }, hostHeader: `127.0.0.1:${port}` },
    served,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

const UPGRADED = 'HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n';
const big = Buffer.from(Array.from({ length: 600_000 }, (_, i) => (i * 31) % 251));
const streamBytes = Buffer.concat([frame(1, 'hello\n'), frame(2, 'warn\n'), frame(1, big)]);

/** Opens a stream and collects every byte (copied, as a consumer must) and the read buffers seen. */
async function collect(transport: EngineTransport, execId = 'abc123') {
  const parts: Buffer[] = [];
  const buffers = new Set<ArrayBufferLike>();
  const stream = await openExecStream(transport, execId, (buf, start, end) => {
    parts.push(Buffer.from(buf.subarray(start, end)));
    buffers.add(buf.buffer);
  });
  return { stream, bytes: () => Buffer.concat(parts), buffers, reads: () => parts.length };
}

describe('openExecStream over a unix socket', () => {
  test('sends the upgrade request and passes on every byte after the 101 head, head split across reads', async () => {
    const head = Buffer.from(UPGRADED);
    const engine = await unixEngine({
      pieces: [head.subarray(0, 20), Buffer.concat([head.subarray(20), streamBytes.subarray(0, 3)]), streamBytes.subarray(3)],
    });
    try {
      const got = await collect(engine.transport, 'exec/id');
      await got.stream.ended;
      expect(got.bytes().equals(streamBytes)).toBe(true);
      const request = engine.served[0]!.request;
      expect(request.split('\r\n')[0]).toBe('POST /exec/exec%2Fid/start HTTP/1.1');
      expect(request).toMatch(/\r\nConnection: Upgrade\r\n/);
      expect(request).toMatch(/\r\nUpgrade: tcp\r\n/);
      expect(request).toMatch(/\r\nHost: localhost\r\n/);
      expect(request.endsWith('\r\n\r\n{"Detach":false,"Tty":false}')).toBe(true);
      expect(request).toMatch(/\r\nContent-Length: 28\r\n/);
    } finally {
      await engine.close();
    }
  });

  test('reads a large stream into one reused buffer', async () => {
    const engine = await unixEngine({ pieces: [UPGRADED, streamBytes] });
    try {
      const got = await collect(engine.transport);
      await got.stream.ended;
      expect(got.bytes().equals(streamBytes)).toBe(true);
      expect(got.reads()).toBeGreaterThan(2); // 600 KB cannot come in one 256 KiB read
      expect(got.buffers.size).toBe(1);
    } finally {
      await engine.close();
    }
  });

  test('an engine that answers 200 without upgrading streams the same way', async () => {
    const engine = await unixEngine({
      pieces: [`HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\n`, streamBytes],
    });
    try {
      const got = await collect(engine.transport);
      await got.stream.ended;
      expect(got.bytes().equals(streamBytes)).toBe(true);
    } finally {
      await engine.close();
    }
  });

  test('an error status rejects with the status and the JSON message', async () => {
    const body = JSON.stringify({ message: 'No such exec instance: abc123' });
    const engine = await unixEngine({
      pieces: [`HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`, body],
      finish: 'hold',
    });
    try {
      const e = await openExecStream(engine.transport, 'abc123', () => undefined).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(e).toBeInstanceOf(ExecStartError);
      expect((e as ExecStartError).statusCode).toBe(404);
      expect((e as ExecStartError).message).toBe('No such exec instance: abc123');
    } finally {
      await engine.close();
    }
  });

  test('a chunked error body is decoded', async () => {
    const hex = (text: string) => Buffer.byteLength(text).toString(16);
    const engine = await unixEngine({
      pieces: [
        'HTTP/1.1 409 Conflict\r\nTransfer-Encoding: chunked\r\n\r\n',
        `${hex('{"message":"conta')}\r\n{"message":"conta`,
        '\r\n',
        `${hex('iner is paused"}\n')}\r\niner is paused"}\n\r\n0\r\n\r\n`,
      ],
      finish: 'hold',
    });
    try {
      const e = (await openExecStream(engine.transport, 'x', () => undefined).catch((err: unknown) => err)) as ExecStartError;
      expect(e).toBeInstanceOf(ExecStartError);
      expect(e.statusCode).toBe(409);
      expect(e.message).toBe('container is paused');
    } finally {
      await engine.close();
    }
  });

  test('an error body that is not JSON is passed on as text; one without length is read to the end', async () => {
    const engine = await unixEngine({ pieces: ['HTTP/1.1 500 Internal Server Error\r\n\r\n', 'runtime exploded\n'] });
    try {
      const e = (await openExecStream(engine.transport, 'x', () => undefined).catch((err: unknown) => err)) as ExecStartError;
      expect(e).toBeInstanceOf(ExecStartError);
      expect(e.statusCode).toBe(500);
      expect(e.message).toBe('runtime exploded');
    } finally {
      await engine.close();
    }
  });

  test('a connection closed before any answer, or an answer that is not HTTP, rejects with a sentence', async () => {
    const silent = await unixEngine({ pieces: [] });
    const garbage = await unixEngine({ pieces: ['SSH-2.0-OpenSSH_9.2\r\n\r\n'] });
    try {
      await expect(openExecStream(silent.transport, 'x', () => undefined)).rejects.toThrow(
        'The engine closed the connection before answering the start of a command.',
      );
      await expect(openExecStream(garbage.transport, 'x', () => undefined)).rejects.toThrow(/not HTTP: "SSH-2\.0-OpenSSH_9\.2"/);
    } finally {
      await silent.close();
      await garbage.close();
    }
  });

  test('an engine that takes the connection but never answers: rejected after the answer timeout', async () => {
    const engine = await unixEngine({ pieces: [], finish: 'hold' });
    try {
      const started = Date.now();
      await expect(openExecStream(engine.transport, 'x', () => undefined, { answerTimeoutMs: 200 })).rejects.toThrow(
        'The engine did not answer the start of a command within 200 ms.',
      );
      expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    } finally {
      await engine.close();
    }
  });

  test('options that make connect throw at once: rejected, and nothing fires later', async () => {
    const e = (await openExecStream({ kind: 'net', options: { host: '127.0.0.1', port: 70_000 }, hostHeader: 'x' }, 'x', () => undefined, {
      answerTimeoutMs: 50,
    }).catch((err: unknown) => err)) as NodeJS.ErrnoException;
    expect(e.code).toBe('ERR_SOCKET_BAD_PORT');
    // The answer timer was never armed: past its time, no uncaught error fails this test.
    await new Promise((r) => setTimeout(r, 150));
  });

  test('no engine at the socket: the socket error with its code', async () => {
    const e = (await openExecStream(
      { kind: 'net', options: { path: join(dir, 'nobody.sock') }, hostHeader: 'localhost' },
      'x',
      () => undefined,
    ).catch((err: unknown) => err)) as NodeJS.ErrnoException;
    expect(e.code).toBe('ENOENT');
  });

  test('destroy() stops reading and settles `ended`', async () => {
    const engine = await unixEngine({ pieces: [UPGRADED, frame(1, 'first\n')], finish: 'hold' });
    try {
      let seen = 0;
      const stream = await openExecStream(engine.transport, 'x', (_b, start, end) => {
        seen += end - start;
      });
      while (seen < 14) await new Promise((r) => setTimeout(r, 5));
      stream.destroy();
      await expect(stream.ended).resolves.toBeUndefined();
    } finally {
      await engine.close();
    }
  });
});

describe('openExecStream over TCP', () => {
  test('plain TCP streams like the unix socket and sends host:port', async () => {
    const engine = await tcpEngine({ pieces: [UPGRADED, streamBytes] });
    try {
      const got = await collect(engine.transport);
      await got.stream.ended;
      expect(got.bytes().equals(streamBytes)).toBe(true);
      expect(engine.served[0]!.request).toMatch(/\r\nHost: 127\.0\.0\.1:\d+\r\n/);
    } finally {
      await engine.close();
    }
  });

  test('a connection reset in the middle of the output rejects `ended` with the error', async () => {
    const engine = await tcpEngine({ pieces: [UPGRADED, frame(1, 'partial')], finish: 'reset' });
    try {
      const got = await collect(engine.transport);
      await expect(got.stream.ended).rejects.toMatchObject({ code: 'ECONNRESET' });
      expect(got.bytes().equals(frame(1, 'partial'))).toBe(true);
    } finally {
      await engine.close();
    }
  });

  test('TLS (an engine with DOCKER_TLS_VERIFY) streams over the same protocol', async () => {
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost',
      ],
      { stdio: 'ignore' },
    );
    const served: Served[] = [];
    const server = tls.createServer({ key: readFileSync(key), cert: readFileSync(cert) });
    serve(server, { pieces: [UPGRADED, streamBytes] }, served);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const got = await collect({
        kind: 'tls',
        options: { host: '127.0.0.1', port, ca: readFileSync(cert), servername: 'localhost' },
        hostHeader: `localhost:${port}`,
      });
      await got.stream.ended;
      expect(got.bytes().equals(streamBytes)).toBe(true);
      expect(served[0]!.request.split('\r\n')[0]).toBe('POST /exec/abc123/start HTTP/1.1');
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
