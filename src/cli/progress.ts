import { displayText } from '../display-text.js';

/** One bar: what it is about, how far it is (0..1, when known), and its last status. */
interface Bar {
  label: string;
  status: string;
  fraction: number | undefined;
  /** Plain output: the last quarter printed, so a line is printed per status or per quarter. */
  printedQuarter: number;
  printedStatus: string;
}

const BAR_WIDTH = 24;
/** A terminal is redrawn at most this often (and once more at the end). */
const REDRAW_MS = 100;

/** `[#########---------------]  37%`, or blanks when the share is not known. */
export function barText(fraction: number | undefined): string {
  if (fraction === undefined) return `[${' '.repeat(BAR_WIDTH)}]     `;
  const f = Math.min(1, Math.max(0, fraction));
  const full = Math.round(f * BAR_WIDTH);
  return `[${'#'.repeat(full)}${'-'.repeat(BAR_WIDTH - full)}] ${String(Math.floor(f * 100)).padStart(3)}%`;
}

/**
 * Progress bars, one per key (a layer of a pull, an image being built). On a terminal the
 * bars are redrawn in place; elsewhere each change of status and each quarter is one plain
 * line, with no control characters. Labels and statuses come from the engine or a script:
 * each is shown through displayText.
 */
export class ProgressBoard {
  private readonly bars = new Map<string, Bar>();
  private drawnLines = 0;
  private lastDraw = 0;
  private labelWidth = 0;

  constructor(
    private readonly write: (text: string) => void,
    private readonly tty: boolean,
    private readonly now: () => number = Date.now,
  ) {}

  update(key: string, label: string, status: string, fraction?: number): void {
    let bar = this.bars.get(key);
    if (!bar) {
      bar = { label: displayText(label, 80), status: '', fraction: undefined, printedQuarter: -1, printedStatus: '' };
      this.bars.set(key, bar);
      this.labelWidth = Math.max(this.labelWidth, bar.label.length);
    }
    bar.status = displayText(status, 100);
    if (fraction !== undefined) bar.fraction = fraction;
    if (this.tty) {
      if (this.now() - this.lastDraw >= REDRAW_MS) this.redraw();
      return;
    }
    const quarter = bar.fraction === undefined ? -1 : Math.floor(Math.min(1, bar.fraction) * 4);
    if (bar.status !== bar.printedStatus || quarter > bar.printedQuarter) {
      bar.printedStatus = bar.status;
      bar.printedQuarter = Math.max(bar.printedQuarter, quarter);
      this.write(`${this.line(bar)}\n`);
    }
  }

  /** A line of other output, kept above the bars on a terminal. */
  print(line: string): void {
    const safe = displayText(line, 2000);
    if (!this.tty || this.drawnLines === 0) {
      this.write(`${safe}\n`);
      return;
    }
    // Up to the first bar, clear to the end of the screen, the line, then the bars again below it.
    this.write(`\x1b[${this.drawnLines}A\x1b[0J${safe}\n`);
    this.drawnLines = 0;
    this.redraw();
  }

  /** The last state of every bar, on a terminal. */
  finish(): void {
    if (this.tty && this.bars.size > 0) this.redraw();
  }

  private line(bar: Bar): string {
    return `${bar.label.padEnd(this.labelWidth)} ${barText(bar.fraction)} ${bar.status}`.trimEnd();
  }

  private redraw(): void {
    this.lastDraw = this.now();
    // Up to the first bar drawn, then every bar again, each line cleared first.
    let text = this.drawnLines > 0 ? `\x1b[${this.drawnLines}A` : '';
    for (const bar of this.bars.values()) text += `\x1b[2K${this.line(bar)}\n`;
    this.drawnLines = this.bars.size;
    this.write(text);
  }
}
