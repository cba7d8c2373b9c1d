/**
 * The live status line `backchannel run` draws on a TTY (stderr): spinner or bar, elapsed time, and
 * what the task spent against its budget, and the last partial's text. Redrawn at most 10 times a second however chatty the agent is.
 */
import { neutralise } from '../terminal-text.js';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const BAR_WIDTH = 20;

export class ProgressLine {
  private frame = 0;
  private timer: NodeJS.Timeout | undefined;
  private percent: number | undefined;
  private note = '';
  /** What the task spent against its budget ("150/200 tokens · $0.03"), live. */
  private spend = '';
  private state = 'queued';
  private readonly startedAt = Date.now();

  private readonly label: string;

  constructor(
    private readonly stream: NodeJS.WriteStream,
    label: string,
  ) {
    this.label = neutralise(label);
  }

  start(): void {
    this.timer = setInterval(() => this.draw(), 100);
    this.timer.unref();
  }

  update(state: string, percent: number | undefined, note?: string, spend?: string): void {
    this.state = state;
    if (spend !== undefined) this.spend = spend;
    if (percent !== undefined) this.percent = percent;
    if (note !== undefined) this.note = neutralise(note);
  }

  /** Prints a whole line above the status line. */
  print(text: string): void {
    this.clear();
    this.stream.write(`${neutralise(text)}\n`);
  }

  stop(): void {
    clearInterval(this.timer);
    this.clear();
  }

  private clear(): void {
    this.stream.write('\r\x1b[2K');
  }

  private draw(): void {
    const seconds = ((Date.now() - this.startedAt) / 1000).toFixed(1);
    const spinner = FRAMES[this.frame++ % FRAMES.length];
    let bar = '';
    if (this.percent !== undefined) {
      const filled = Math.round((this.percent / 100) * BAR_WIDTH);
      bar = ` [${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)}] ${Math.round(this.percent)}%`;
    }
    const width = this.stream.columns || 80;
    const spend = this.spend ? ` · ${this.spend}` : '';
    const line = `${spinner} ${this.label} · ${this.state}${bar} · ${seconds}s${spend}${this.note ? ` · ${this.note}` : ''}`;
    this.stream.write(`\r\x1b[2K${line.slice(0, width - 1)}`);
  }
}
