import { CommandSegment, encodeRequest, MarkerScanner, MAX_END_FRAME_BYTES } from '../../../src/commands/kept-shell-frames.js';

const NONCE = '0123456789abcdef0123456789abcdef';

/** Feeds `data` to a scanner in every split into two chunks, and three-byte pieces. */
function splits(data: Buffer): Buffer[][] {
  const out: Buffer[][] = [];
  for (let i = 0; i <= data.length; i++) out.push([data.subarray(0, i), data.subarray(i)]);
  const small: Buffer[] = [];
  for (let i = 0; i < data.length; i += 3) small.push(data.subarray(i, i + 3));
  out.push(small);
  return out;
}

describe('MarkerScanner', () => {
  const marker = Buffer.from('\x1eABCD\x1e', 'latin1');
  test('finds the marker however the stream is cut, passing on exactly the bytes before it', () => {
    const before = Buffer.from('x\x1eAB\x1e\x1eABC y\x1e', 'latin1');
    const data = Buffer.concat([before, marker, Buffer.from('after')]);
    for (const chunks of splits(data)) {
      const s = new MarkerScanner(marker);
      const seen: Buffer[] = [];
      let rest: Buffer | undefined;
      for (const c of chunks) {
        if (rest) {
          rest = Buffer.concat([rest, c]);
          continue;
        }
        const at = s.push(c, (b) => seen.push(Buffer.from(b)));
        if (at !== -1) rest = c.subarray(at);
      }
      expect(Buffer.concat(seen).toString('latin1')).toBe(before.toString('latin1'));
      expect(rest?.toString()).toBe('after');
    }
  });

  test('a stream without the marker passes on every byte (the held tail on flush)', () => {
    const data = Buffer.from('abc\x1eABC', 'latin1');
    const s = new MarkerScanner(marker);
    const seen: Buffer[] = [];
    expect(s.push(data, (b) => seen.push(Buffer.from(b)))).toBe(-1);
    expect(Buffer.concat(seen).toString('latin1')).toBe('abc');
    s.flush((b) => seen.push(Buffer.from(b)));
    expect(Buffer.concat(seen).equals(data)).toBe(true);
  });
});

describe('CommandSegment', () => {
  const b = `\x1f${NONCE}b\x1f`;
  const e = `\x1f${NONCE}e\x1f`;
  function run(stdout: string, stderr: string, cut = 1_000_000) {
    const got = { stdout: '', stderr: '' };
    const broken: string[] = [];
    const seg = new CommandSegment(
      NONCE,
      (s, bytes) => (got[s] += bytes.toString('latin1')),
      (w) => broken.push(w),
    );
    let done = false;
    for (const [s, text] of [
      ['stdout', stdout],
      ['stderr', stderr],
    ] as const)
      for (let i = 0; i < text.length; i += cut) done = seg.push(s, Buffer.from(text.slice(i, i + cut), 'latin1')) || done;
    return { got, broken, done, seg };
  }

  test('drops what comes before the begin mark, passes the body, reads the end frame', () => {
    for (const cut of [1, 2, 7, 1000]) {
      const r = run(`stray${b}out\x1f${NONCE}${e}3:1:/tmp/a b\0`, `late${b}\x1e9:0:0\x1eerr\x1e0:0\x1e${e}`, cut);
      expect(r.got).toEqual({ stdout: `out\x1f${NONCE}`, stderr: '\x1e9:0:0\x1eerr\x1e0:0\x1e' });
      expect(r.done).toBe(true);
      expect(r.seg.result).toEqual({ exitCode: 3, stateKept: true, folder: '/tmp/a b' });
      expect(r.seg.dropped).toBe(9);
      expect(r.broken).toEqual([]);
    }
  });

  test('the header is passed on whole at once: its closing mark is never held as the start of the end mark', () => {
    const got: string[] = [];
    const seg = new CommandSegment(
      NONCE,
      (_s, bytes) => got.push(bytes.toString('latin1')),
      () => undefined,
    );
    seg.push('stderr', Buffer.from(`${b}\x1e14:0:0\x1e`, 'latin1'));
    expect(got.join('')).toBe('\x1e14:0:0\x1e');
  });

  test('a marker of another nonce is the command’s own output', () => {
    const other = '\x1fffffffffffffffffffffffffffffffffe\x1f';
    const r = run(`${b}${other}0:1:/\0${e}0:1:/\0`, `${b}${e}`);
    expect(r.got.stdout).toBe(`${other}0:1:/\0`);
    expect(r.seg.result?.exitCode).toBe(0);
  });

  test('an end frame that is not the shell’s marks it broken', () => {
    expect(run(`${b}${e}zz\0`, `${b}${e}`).broken).toHaveLength(1);
    expect(run(`${b}${e}0:1:/${'a'.repeat(MAX_END_FRAME_BYTES)}`, `${b}${e}`).broken).toHaveLength(1);
  });

  test('a folder in UTF-8 is read back whole', () => {
    const folder = Buffer.from('/tmp/é✓', 'utf8').toString('latin1');
    expect(run(`${b}${e}0:1:${folder}\0`, `${b}${e}`).seg.result?.folder).toBe('/tmp/é✓');
  });
});

describe('encodeRequest', () => {
  test('one + line per command line, the count in the head line', () => {
    expect(encodeRequest(NONCE, 'M=1', 'a\n\nb\n')).toBe(`${NONCE} M=1 4\n+a\n+\n+b\n+\n`);
    expect(encodeRequest(NONCE, 'M=1', 'x')).toBe(`${NONCE} M=1 1\n+x\n`);
  });
});
