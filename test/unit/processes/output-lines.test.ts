import { OutputLines } from '../../../src/processes/output-lines.js';
import { listeningSockets } from '../../../src/processes/listening-ports.js';

const text = (r: { bytes: Buffer }) => r.bytes.toString('utf8');

describe('OutputLines: the last bytes of a process, by line number', () => {
  test('totalBytes counts every byte pushed, kept or dropped, and nothing else: a waiter looks again only when it moved', () => {
    const w = new OutputLines(8);
    expect(w.totalBytes).toBe(0);
    w.push(Buffer.alloc(0));
    expect(w.totalBytes).toBe(0);
    w.push(Buffer.from('abc\n'));
    w.push(Buffer.from('a line longer than the window\n'));
    expect(w.totalBytes).toBe(4 + 30);
    w.since(0);
    expect(w.totalBytes).toBe(34);
  });

  test('reads since a line, however the output was chunked; a partial last line comes again once whole', () => {
    const w = new OutputLines(1024);
    for (const c of ['one\ntw', 'o\nthr', 'ee']) w.push(Buffer.from(c));
    expect(w.lines).toBe(3);
    expect(w.completeLines).toBe(2);
    const all = w.since(0);
    expect(all).toMatchObject({ fromLine: 1, toLine: 2, missed: 0, partial: true });
    expect(text(all)).toBe('one\ntwo\nthree');
    w.push(Buffer.from('\nfour\n'));
    const after = w.since(2);
    expect(after).toMatchObject({ fromLine: 3, toLine: 4, partial: false });
    expect(text(after)).toBe('three\nfour\n');
    expect(text(w.since(4))).toBe('');
    expect(w.since(99)).toMatchObject({ fromLine: 5, toLine: 4 });
  });

  test('past its cap the oldest lines leave; a read from before them says how many are missed', () => {
    const w = new OutputLines(20);
    for (let i = 1; i <= 10; i++) w.push(Buffer.from(`line${i}\n`));
    expect(w.completeLines).toBe(10);
    const r = w.since(0);
    // 20 bytes hold the newline of line 7, then lines 8 to 10 whole.
    expect(r).toMatchObject({ fromLine: 8, toLine: 10, missed: 7 });
    expect(text(r)).toBe('line8\nline9\nline10\n');
    expect(w.since(9)).toMatchObject({ fromLine: 10, missed: 0 });
  });

  test('a chunk larger than the whole window keeps only its end, and the line count stays exact', () => {
    const w = new OutputLines(16);
    w.push(Buffer.from('a\nb\n'));
    w.push(Buffer.from(`${'x\n'.repeat(100)}end\n`));
    expect(w.completeLines).toBe(103);
    const r = w.since(0);
    expect(r.toLine).toBe(103);
    expect(text(r).endsWith('x\nend\n')).toBe(true);
    // 16 bytes: six "x" lines and "end", lines 97 to 103.
    expect(r).toMatchObject({ fromLine: 97, missed: 96 });
  });
});

describe('listeningSockets: /proc/net/tcp and tcp6', () => {
  test('only LISTEN rows, with their port and address, IPv4 and IPv6', () => {
    const table = [
      '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1',
      '   1: 0100007F:1F90 0100007F:8C2E 01 00000000:00000000 00:00000000 00000000  1000        0 2 1',
      '   2: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 3 1',
      '  sl  local_address                         remote_address                        st',
      '   0: 00000000000000000000000000000000:1F91 00000000000000000000000000000000:0000 0A 0',
      '   1: 0000000000000000FFFF00000100007F:0BB8 00000000000000000000000000000000:0000 0A 0',
      'garbage 0: nothing',
    ].join('\n');
    expect(listeningSockets(table)).toEqual([
      { port: 8080, address: '127.0.0.1' },
      { port: 80, address: '0.0.0.0' },
      { port: 8081, address: '::' },
      { port: 3000, address: '127.0.0.1' },
    ]);
  });
});
