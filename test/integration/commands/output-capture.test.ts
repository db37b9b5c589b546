/**
 * Output capture against a real engine: 1 GiB through the pipeline with flat memory and an
 * exact log; byte-exact binary logs; UTF-8 that straddles frame boundaries.
 */
import { createHash } from 'node:crypto';
import { createReadStream, openSync, readFileSync, readSync, closeSync, rmSync, statSync } from 'node:fs';
import { sharedSandbox, engineSuite } from '../../support/engine.js';

const GIB = 1024 ** 3;
const MAX_BYTES = 16 * 1024; // the default exec.maxBytes
const shared = sharedSandbox();

engineSuite('output-capture', {
  afterAll: async () => {
    await shared.release();
  },
});

function sha256File(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(path)
      .on('data', (c) => h.update(c))
      .on('end', () => resolve(h.digest('hex')))
      .on('error', reject);
  });
}

function byteAt(path: string, position: number): number {
  const fd = openSync(path, 'r');
  try {
    const b = Buffer.alloc(1);
    expect(readSync(fd, b, 0, 1, position)).toBe(1);
    return b[0]!;
  } finally {
    closeSync(fd);
  }
}

// Every test here runs in sequence: the memory measurement must see only its own command.
test('1 GiB of output: a log within its cap, capped answer, exact counts, flat memory', async () => {
  const sb = await shared.get();
  // A 1 MiB file of 'a' concatenated 1024 times by one cat: the fastest generator in busybox.
  const cmd =
    "dd if=/dev/zero bs=1048576 count=1 2>/dev/null | tr '\\0' a > /tmp/mib && " +
    'set -- && for i in $(seq 1024); do set -- "$@" /tmp/mib; done && cat "$@"';
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  let logPath: string | undefined;
  try {
    const r = await sb.exec(cmd, { timeoutMs: 120_000, label: 'gib' });
    peak = Math.max(peak, process.memoryUsage().rss);
    logPath = r.logPath;
    expect({ exitCode: r.exitCode, timedOut: r.timedOut, truncated: r.truncated }).toEqual({
      exitCode: 0,
      timedOut: false,
      truncated: true,
    });
    expect(r.bytes).toEqual({ stdout: GIB, stderr: 0 });
    expect(r.lines.stdout).toBe(1);
    // The answer is capped: at most maxBytes of output plus the marker saying what was cut.
    const shown = Buffer.byteLength(r.stdout);
    expect(shown).toBeLessThanOrEqual(MAX_BYTES + 300);
    expect(shown).toBeGreaterThan(MAX_BYTES / 2);
    expect(r.stdout).toMatch(
      /^a+\n\[\.\.\. \d+ bytes, about \d+ lines omitted of 1073741824 bytes, 1 lines; full output: .+ \.\.\.\]\na+$/,
    );
    expect(r.stdout).toContain(r.logPath);
    // The log keeps its first and last 32 MiB (logs.maxCommandBytes, 64 MiB), and says what it dropped between.
    const half = 32 * 1024 * 1024;
    const size = statSync(r.logPath).size;
    expect(size).toBeGreaterThan(2 * half);
    expect(size).toBeLessThan(2 * half + 512);
    for (const pos of [0, 1, 1024 * 1024, half - 1, size - half, size - 12345, size - 1]) {
      expect([pos, byteAt(r.logPath, pos)]).toEqual([pos, 'a'.charCodeAt(0)]);
    }
    expect(r.logCut).toBe(
      `the full log keeps the first 32 MiB and the last 32 MiB of 1024 MiB: ${GIB - 2 * half} bytes in the middle were dropped (logs.maxCommandBytes: 64 MiB)`,
    );
    const meta = JSON.parse(readFileSync(r.logPath.replace(/\.log$/, '.json'), 'utf8')) as { bytes: { stdout: number } };
    expect(meta.bytes.stdout).toBe(GIB);
  } finally {
    clearInterval(sampler);
    if (logPath) rmSync(logPath, { force: true });
  }
  const growthMiB = (peak - baseline) / 1024 ** 2;
  expect(growthMiB).toBeLessThan(64);
}, 180_000);

test('random binary output (1 MiB) is byte-exact in the log', async () => {
  const sb = await shared.get();
  const made = await sb.exec('head -c 1048576 /dev/urandom > /tmp/rand.bin && sha256sum /tmp/rand.bin');
  expect(made.exitCode).toBe(0);
  const inside = made.stdout.split(/\s+/)[0];
  expect(inside).toMatch(/^[0-9a-f]{64}$/);
  const r = await sb.exec(['cat', '/tmp/rand.bin']);
  expect(r.exitCode).toBe(0);
  expect(r.bytes.stdout).toBe(1048576);
  expect(statSync(r.logPath).size).toBe(1048576);
  expect(await sha256File(r.logPath)).toBe(inside);
  // What the model sees says it is binary and where the bytes are; never raw bytes.
  expect(r.stdout).toContain('binary output');
  expect(r.stdout).toContain(r.logPath);
  expect(Buffer.byteLength(r.stdout)).toBeLessThanOrEqual(MAX_BYTES + 300);
  expect(r.truncated).toBe(true);
}, 60_000);

test('all 256 byte values, in order, are exact in the log and the counts', async () => {
  const sb = await shared.get();
  let fmt = '';
  for (let i = 0; i < 256; i++) fmt += `\\${i.toString(8).padStart(3, '0')}`;
  const r = await sb.exec(['printf', fmt]);
  expect(r.exitCode).toBe(0);
  expect(r.bytes.stdout).toBe(256);
  const expected = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  expect(readFileSync(r.logPath).equals(expected)).toBe(true);
  expect(r.lines.stdout).toBe(2); // one newline (byte 10), and bytes after it
}, 60_000);

test('binary on stdout and text on stderr: both exact in the log, in order of arrival', async () => {
  const sb = await shared.get();
  // A second between the two writes: the engine reads stdout and stderr separately, so
  // "order of arrival" needs them well apart even on a loaded machine.
  const r = await sb.exec("printf '\\000\\001\\377'; sleep 1; printf 'warn\\n' >&2");
  expect(r.bytes).toEqual({ stdout: 3, stderr: 5 });
  expect(r.stderr).toBe('warn\n');
  expect(readFileSync(r.logPath).equals(Buffer.from([0, 1, 255, ...Buffer.from('warn\n')]))).toBe(true);
}, 60_000);

test('multibyte UTF-8 cut across writes and frames decodes without replacement characters', async () => {
  const sb = await shared.get();
  // 5000 euro signs (3 bytes each) = 15000 bytes: under the cap. dd writes them 7 bytes at a
  // time, so writes, frames and socket reads all cut characters in the middle.
  const r = await sb.exec("i=0; while [ $i -lt 5000 ]; do printf '€'; i=$((i+1)); done > /tmp/euro && dd if=/tmp/euro bs=7 2>/dev/null", {
    timeoutMs: 60_000,
  });
  expect(r.exitCode).toBe(0);
  expect(r.bytes.stdout).toBe(15000);
  expect(r.truncated).toBe(false);
  expect(r.stdout).not.toContain('\ufffd');
  expect(r.stdout).toBe('€'.repeat(5000));
  expect(readFileSync(r.logPath).equals(Buffer.from('€'.repeat(5000)))).toBe(true);
}, 60_000);

test('truncated UTF-8: head and tail are cut at character boundaries, no replacement characters', async () => {
  const sb = await shared.get();
  // 20001 euro signs plus an odd ASCII byte up front: the cut points fall inside characters.
  const run = '€'.repeat(101);
  const r = await sb.exec(`printf x; i=0; while [ $i -lt 20001 ]; do printf '${run}'; i=$((i+101)); done | dd bs=7 2>/dev/null`, {
    timeoutMs: 60_000,
  });
  expect(r.exitCode).toBe(0);
  expect(r.truncated).toBe(true);
  expect(r.bytes.stdout).toBe(1 + 3 * 101 * Math.ceil(20001 / 101));
  expect(r.stdout).not.toContain('\ufffd');
  const [head, tail] = r.stdout.split(/\n\[\.\.\. .* \.\.\.\]\n/);
  expect(head).toMatch(/^x(€)+$/);
  expect(tail).toMatch(/^(€)+$/);
  expect(Buffer.byteLength(r.stdout)).toBeLessThanOrEqual(MAX_BYTES + 300);
}, 60_000);
