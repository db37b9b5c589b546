import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { answerForModel, buildCommandAnswer, type OutputSummarizer } from '../../../src/answer/command-answer.js';
import { StreamWindow } from '../../../src/capture/stream-window.js';
import { commandUserText } from '../../../src/actions/answers.js';
import type { ExecResult } from '../../../src/commands/exec-types.js';
import { removeTempDirs, tempDir } from '../helpers.js';

/**
 * The answers to real output of real tools (bench/corpus: made by running them, never
 * written by hand): every line a developer needs reaches the main model verbatim, within
 * the token budget; a successful run with no error costs no key lines.
 */
const CORPUS = join(dirname(fileURLToPath(import.meta.url)), '../../../bench/corpus/out');
const items = readdirSync(CORPUS).filter((n) => existsSync(join(CORPUS, n, 'needed')));

afterEach(() => removeTempDirs());

/** The stand-in for the lite model: an 800-character summary that quotes nothing. */
const STAND_IN = 'The command ran and printed a long output; see the key lines. '.repeat(20).slice(0, 800);
const summarizer: OutputSummarizer = async () => STAND_IN;

/** What sandbox.exec gives for this output with the default capture (16 KiB, 500 lines a stream). */
function replay(name: string): ExecResult {
  const dir = join(CORPUS, name);
  const out = readFileSync(join(dir, 'stdout'));
  const err = readFileSync(join(dir, 'stderr'));
  const logPath = join(tempDir(), '0001-cmd.log');
  writeFileSync(logPath, Buffer.concat([out, err]));
  const windows = [out, err].map((bytes) => {
    const w = new StreamWindow(16 * 1024, 500);
    w.push(bytes);
    return { w, shown: w.render(logPath) };
  });
  return {
    command: readFileSync(join(dir, 'cmd'), 'utf8').trim(),
    exitCode: Number(readFileSync(join(dir, 'exit'), 'utf8')),
    stdout: windows[0]!.shown.text,
    stderr: windows[1]!.shown.text,
    truncated: windows.some((x) => x.shown.truncated),
    timedOut: false,
    canceled: false,
    oomKilled: false,
    pidsLimitHit: false,
    diskLimitHit: false,
    bytes: { stdout: out.length, stderr: err.length },
    lines: { stdout: windows[0]!.w.lines, stderr: windows[1]!.w.lines },
    durationMs: 10,
    logPath,
  };
}

/** Colour codes: the answer shows the text without them. */
// eslint-disable-next-line no-control-regex -- the escape character starts what is removed
const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g;

/** The whole lines of the output that hold each needed part, trimmed and without colour codes (as key lines are). */
function neededLines(name: string): Array<{ part: string; lines: string[] }> {
  const dir = join(CORPUS, name);
  const text = `${readFileSync(join(dir, 'stdout'), 'utf8')}\n${readFileSync(join(dir, 'stderr'), 'utf8')}`.split('\n');
  return readFileSync(join(dir, 'needed'), 'utf8')
    .split('\n')
    .filter((p) => p.trim() !== '')
    .map((part) => ({
      part: part.replace(ANSI, ''),
      lines: [...new Set(text.filter((l) => l.includes(part)).map((l) => l.replace(ANSI, '').trim()))],
    }));
}

const tokens: Record<string, number> = {};

describe.each(items)('%s', (name) => {
  test('every needed line reaches the model verbatim, within 600 tokens', async () => {
    const r = replay(name);
    const answer = await buildCommandAnswer(r, { summarizer });
    const content = JSON.stringify(answerForModel(answer));
    const userText = commandUserText('gcd-1', r.command, r);
    const seen = [answer.output ?? '', ...(answer.keyLines ?? [])].join('\n');
    const needed = neededLines(name);
    for (const { part, lines } of needed) {
      expect({ part, found: lines.length > 0 }).toEqual({ part, found: true });
      // At least one line holding the part, whole (a line over 200 characters may be clipped
      // around it; a line glued to binary bytes is read from where they end).
      // eslint-disable-next-line no-control-regex -- bytes that are not text
      const partial = (l: string) => l.length > 200 || /[\x00-\x08\x0e-\x1a\x1c-\x1f\ufffd]/.test(l);
      const kept = lines.some((l) => seen.includes(l) || (partial(l) && (answer.keyLines ?? []).some((k) => k.includes(part))));
      expect({ part, kept }).toEqual({ part, kept: true });
    }
    if (needed.length === 0 && r.exitCode === 0) expect(answer.keyLines).toBeUndefined();
    tokens[name] = Math.ceil((content.length + userText.length) / 4);
    expect(tokens[name]).toBeLessThanOrEqual(600);
  });
});

test('on average, at most 300 tokens an answer', () => {
  const all = Object.values(tokens);
  expect(all.length).toBe(items.length);
  expect(all.reduce((s, t) => s + t, 0) / all.length).toBeLessThanOrEqual(300);
});
