/**
 * Text that a model, a container or an engine chose, made safe to show a person on one
 * line: no terminal escape sequence, no line break that forges another line, no character
 * that hides or reorders text. Each such character is shown by name instead:
 *   - line feed, carriage return and tab as `\n`, `\r`, `\t`;
 *   - other C0 and C1 controls and DEL as `\xHH` (ESC is `\x1b`);
 *   - invisible or reordering Unicode (the HIDDEN set below) as `<U+HHHH>`.
 * Longer text is cut at `maxChars` with an ellipsis.
 */

/**
 * Characters a reader cannot see that change what text says or hide text in it: every
 * format character (\p{Cf}: zero-width characters, bidi embeddings, overrides and
 * isolates, the byte-order mark, the tag characters U+E0000-U+E007F, which can spell a
 * hidden instruction to a model), every default-ignorable code point (variation
 * selectors, which can carry hidden bytes, fillers), the line and paragraph separators,
 * and the blank look-alikes U+2800, U+3164, U+FFA0, U+115F and U+1160.
 */
const HIDDEN = String.raw`\p{Cf}\p{Default_Ignorable_Code_Point}\u2028\u2029\u2800\u3164\uffa0\u115f\u1160\ufe00-\ufe0f\u{e0100}-\u{e01ef}\u{e0000}-\u{e007f}`;

// eslint-disable-next-line no-misleading-character-class -- each joiner and selector is found on its own, by design
const UNSAFE = new RegExp(`[\\u0000-\\u001f\\u007f-\\u009f${HIDDEN}]`, 'gu');

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function shown(ch: string): string {
  const named = NAMED[ch];
  if (named) return named;
  const cp = ch.codePointAt(0)!;
  return cp <= 0xff ? `\\x${cp.toString(16).padStart(2, '0')}` : `<U+${cp.toString(16).toUpperCase().padStart(4, '0')}>`;
}

// eslint-disable-next-line no-misleading-character-class -- as for UNSAFE
const INVISIBLE = new RegExp(`[${HIDDEN}]`, 'gu');

/**
 * Text a model reads, with every invisible character shown by name (`<U+202E>`); line
 * breaks and the rest are kept, as a model needs them.
 */
export function showInvisible(text: string): string {
  return String(text).replace(INVISIBLE, shown);
}

/** showInvisible over every string in a JSON-like value (an answer to a model). */
export function showInvisibleIn<T>(value: T): T {
  if (typeof value === 'string') return showInvisible(value) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => showInvisibleIn(v)) as T;
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, showInvisibleIn(v)])) as T;
  }
  return value;
}

/** Default cut for one line of text shown to a person. */
const DISPLAY_MAX_CHARS = 500;

/** Like displayText, for text of several lines (a summary, a report): line feeds and tabs stay, nothing is cut. */
export function displayLines(text: string): string {
  return String(text).replace(UNSAFE, (ch) => (ch === '\n' || ch === '\t' ? ch : shown(ch)));
}

/** One line of outside text, safe to show a person (the rules are at the top of this file). */
export function displayText(text: string, maxChars: number = DISPLAY_MAX_CHARS): string {
  const s = String(text);
  let cut = s;
  if (s.length > maxChars) {
    // Never split a surrogate pair: half a character is not text.
    const end = /[\ud800-\udbff]/.test(s[maxChars - 1] ?? '') ? maxChars - 1 : maxChars;
    cut = `${s.slice(0, end)}…`;
  }
  return cut.replace(UNSAFE, shown);
}

/**
 * `text.slice(start, end)` that never cuts a character in two: a boundary that falls between
 * the halves of a surrogate pair (an emoji, a rare CJK character) moves to the pair's start.
 */
export function sliceText(text: string, start: number, end = text.length): string {
  const at = (i: number) => {
    const k = Math.max(0, Math.min(text.length, i < 0 ? text.length + i : i));
    const c = text.charCodeAt(k);
    return k > 0 && c >= 0xdc00 && c <= 0xdfff && text.charCodeAt(k - 1) >= 0xd800 && text.charCodeAt(k - 1) <= 0xdbff ? k - 1 : k;
  };
  return text.slice(at(start), at(end));
}
