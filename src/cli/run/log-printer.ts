/** `logs`' printing: a task's log lines, each printed once, however often the log is read again. */
import type { BackchannelBridge } from '../../client/index.js';
import type { LogLine } from '../../model/task.js';

/** Prints a task's log lines past the ones already printed; call it again on every change. */
export class LogPrinter {
  private printed = 0;
  private last: LogLine | undefined;

  constructor(
    private readonly bridge: BackchannelBridge,
    private readonly id: string,
    private readonly write: (text: string) => void,
  ) {}

  async pull(): Promise<void> {
    const { log } = await this.bridge.getTask(this.id);
    // The hub keeps the last lines only: when older ones were dropped, start after the last one printed.
    let from = this.printed;
    if (this.last && log[from - 1] !== undefined && !sameLine(log[from - 1]!, this.last)) {
      const at = log.findLastIndex((line) => sameLine(line, this.last!));
      from = at + 1;
    }
    for (const line of log.slice(from)) this.write(`[${line.stream}] ${line.text}`);
    this.printed = log.length;
    this.last = log.at(-1) ?? this.last;
  }
}

function sameLine(a: LogLine, b: LogLine): boolean {
  return a.time === b.time && a.text === b.text && a.stream === b.stream;
}
