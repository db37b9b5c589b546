import { CPU_CEILING_S, EXEC_MARK_VAR, ExecMarks, NestedMarks, parseMark, type MarkPair } from '../../../src/commands/exec-marks.js';

/** Whether a process with limits `p` is in the down-set a kill of `mark` takes. */
const below = (p: MarkPair, mark: MarkPair) => p.rssKb <= mark.rssKb && p.cpuSeconds <= mark.cpuSeconds;
const SLOTS = 2 ** 20;
const STRIDE = 2 ** 12;

/** Marks for chosen indexes (each `next()` takes the pick's value when free). */
function topMarks(indexes: number[]): string[] {
  const picks = [...indexes];
  const marks = new ExecMarks(() => picks.shift() ?? 1);
  return indexes.map(() => marks.next());
}

describe('exec marks: pairs of limits no process can raise', () => {
  test('the wire form: NAME=<rss kB>:<cpu s>, each of a fixed number of digits (an environment match is exact)', () => {
    for (const mark of topMarks([1, 2, SLOTS / 2, SLOTS - 1])) {
      expect(mark).toMatch(new RegExp(`^${EXEC_MARK_VAR}=\\d{13}:\\d{10}$`));
      const nested = new NestedMarks(mark);
      expect(nested.mark(1)).toMatch(/=\d{13}:\d{10}$/);
      expect(nested.mark(STRIDE - 1)).toMatch(/=\d{13}:\d{10}$/);
    }
  });

  test('execs of their own: no pair is in another one’s down-set (edges of the range included)', () => {
    const marks = topMarks([1, 2, 3, 4095, 4096, 4097, SLOTS / 2, SLOTS - 2, SLOTS - 1]).map(parseMark);
    for (const [i, a] of marks.entries()) for (const [j, b] of marks.entries()) expect(below(a, b)).toBe(i === j);
  });

  test('a kept shell’s commands: strictly below the shell, never below one another, never below another exec or it below them', () => {
    const tops = topMarks([1, 2, 3, 1000, SLOTS - 2, SLOTS - 1]);
    for (const shell of tops) {
      const nested = new NestedMarks(shell);
      const commands = [1, 2, STRIDE / 2, STRIDE - 2, STRIDE - 1].map((m) => parseMark(nested.mark(m)));
      const s = parseMark(shell);
      for (const [i, c] of commands.entries()) {
        expect(below(c, s)).toBe(true);
        expect(c.rssKb < s.rssKb && c.cpuSeconds < s.cpuSeconds).toBe(true);
        // A command's kill never reaches the shell.
        expect(below(s, c)).toBe(false);
        for (const [j, d] of commands.entries()) expect(below(c, d)).toBe(i === j);
        for (const other of tops.filter((t) => t !== shell).map(parseMark)) {
          expect(below(c, other)).toBe(false);
          expect(below(other, c)).toBe(false);
        }
      }
    }
  });

  test('every pair is under the ceiling, and the ceiling in nanoseconds fits the kernel’s 64 bits', () => {
    for (const mark of topMarks([1, SLOTS - 1])) {
      expect(parseMark(mark).cpuSeconds).toBeLessThan(CPU_CEILING_S);
      expect(parseMark(new NestedMarks(mark).mark(STRIDE - 1)).cpuSeconds).toBeLessThan(CPU_CEILING_S);
    }
    expect(BigInt(CPU_CEILING_S) * 1_000_000_000n).toBeLessThan(2n ** 64n);
  });

  test('a mark is never used twice in a sandbox, even when the random pick repeats', () => {
    const marks = new ExecMarks(() => 7);
    const seen = new Set(Array.from({ length: 50 }, () => marks.next()));
    expect(seen.size).toBe(50);
    const nested = new NestedMarks(marks.next(), () => 5);
    const ms = new Set(Array.from({ length: 50 }, () => nested.nextIndex()));
    expect(ms.size).toBe(50);
  });

  test('a kept shell that used every command mark starts over rather than fail', () => {
    const nested = new NestedMarks(new ExecMarks().next(), () => 1);
    const first = Array.from({ length: STRIDE - 1 }, () => nested.nextIndex());
    expect(new Set(first).size).toBe(STRIDE - 1);
    expect(nested.nextIndex()).toBe(1);
  });

  test('parseMark refuses what is not a mark', () => {
    expect(() => parseMark('GENAICODE_DOCKER_EXEC=abc')).toThrow(/not an exec mark/);
  });
});
