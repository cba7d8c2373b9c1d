/**
 * The details pane of one task. Sections rebuild only when their own input changes, so an open
 * JSON tree or a half-typed answer survives the many updates of a running task.
 */
import type { FinalPayload, LogLine, TaskSnapshot } from '../bridge/contract.js';
import { appendAll, h, setText } from './dom.js';
import {
  commandLine,
  failureText,
  formatBytes,
  formatDuration,
  formatTime,
  isFinished,
  modelName,
  STATE_LABEL,
  taskTime,
} from './format.js';
import { jsonText, jsonView } from './json-view.js';
import { isFailedOrRetrying, partialResultOf } from '../model/states.js';
import { questionContext } from '../model/questions.js';
import { approvalCard } from './approval-card.js';
import { waitingForTools } from '../model/tools.js';
import { describeBudget, describeUsage } from '../model/usage.js';

export interface DetailsActions {
  close(): void;
  cancel(id: string): void;
  retry(id: string): void;
  answer(id: string, askId: string, text: string): void;
  copy(text: string): void;
  /** Saves one attachment of the task's result as a file. */
  download(id: string, name: string): void;
  /** Fetches a task's whole result when its snapshot carries only a summary (`taskResult`). */
  loadResult(id: string): Promise<FinalPayload | null>;
  /** Saves `text` as a file named `name`. */
  saveText(name: string, text: string): void;
}

/** A section drawn from the shown task by its own module (the Change section of a coding task, review.ts). */
export interface DetailsSection {
  readonly root: HTMLElement;
  show(task: TaskSnapshot): void;
  reset(): void;
}

/** Lines of the task log shown (the broker bounds the log too). */
const MAX_LOG_LINES = 500;
/** A fetched result bigger than this is shown as text, cut at RESULT_TEXT_SHOWN: a tree of it would not help. */
const LARGE_RESULT_BYTES = 1024 * 1024;
/** Characters of a large result's JSON shown; Copy and Download have all of it. */
const RESULT_TEXT_SHOWN = 64 * 1024;

/** The whole result of the shown task, fetched because its snapshot carries only a summary. */
type Fetched =
  | { id: string; state: 'loading' }
  | { id: string; state: 'done'; payload: FinalPayload | null }
  | { id: string; state: 'error'; message: string };

export class Details {
  readonly root: HTMLElement;
  private readonly title = h('h2', { class: 'details-title', attrs: { id: 'details-title' } });
  private readonly badge = h('span', { class: 'badge' });
  private readonly idLine = h('div', { class: 'details-id' });
  private readonly cancelButton = h('button', { text: 'Cancel task', class: 'danger', attrs: { type: 'button', 'data-action': 'cancel' } });
  private readonly retryButton = h('button', { text: 'Retry', attrs: { type: 'button', 'data-action': 'retry' } });
  private readonly closeButton = h('button', { text: 'Close', class: 'quiet', attrs: { type: 'button', 'aria-label': 'Close details' } });
  private readonly question = h('section', { class: 'section question', attrs: { 'aria-label': 'Question from the sub-agent' } });
  private readonly summary = h('dl', { class: 'facts' });
  private readonly failure = h('section', { class: 'section failure', attrs: { 'aria-label': 'Error' } });
  private readonly result = h('section', { class: 'section result' });
  private readonly meta = h('section', { class: 'section meta' });
  private readonly command = h('section', { class: 'section command' });
  private readonly log = h('pre', { class: 'log', attrs: { 'aria-label': 'Task log' }, tabIndex: 0 });
  private task: TaskSnapshot | undefined;
  private keys = unrendered();
  private fetched: Fetched | undefined;

  constructor(
    private readonly actions: DetailsActions,
    private readonly change?: DetailsSection,
    /** The runs of the task's thread (a coding task and its follow-ups, ./threads.ts). */
    private readonly thread?: DetailsSection,
  ) {
    for (const section of [this.question, this.failure, this.result, this.meta]) section.hidden = true;
    this.cancelButton.addEventListener('click', () => this.task && this.actions.cancel(this.task.id));
    this.retryButton.addEventListener('click', () => this.task && this.actions.retry(this.task.id));
    this.closeButton.addEventListener('click', () => this.actions.close());
    this.root = h('article', { class: 'details', attrs: { 'aria-labelledby': 'details-title' }, tabIndex: -1 }, [
      h('header', { class: 'details-head' }, [
        h('div', { class: 'details-heading' }, [this.badge, this.title]),
        h('div', { class: 'details-buttons' }, [this.cancelButton, this.retryButton, this.closeButton]),
      ]),
      this.idLine,
      this.question,
      this.summary,
      this.thread?.root,
      this.change?.root,
      this.failure,
      this.result,
      this.meta,
      this.command,
      h('section', { class: 'section' }, [h('h3', { text: 'Log' }), this.log]),
    ]);
  }

  get taskId(): string | undefined {
    return this.task?.id;
  }

  /** Forgets the shown task, so the next `show` rebuilds every section. */
  reset(): void {
    this.task = undefined;
    this.keys = unrendered();
    this.fetched = undefined;
    this.change?.reset();
    this.thread?.reset();
  }

  show(task: TaskSnapshot, now: number): void {
    if (this.task?.id !== task.id) this.keys = unrendered();
    this.task = task;
    setText(this.title, task.label);
    const asking = task.pendingQuestion?.approval ? 'Needs approval' : 'Needs answer';
    setText(this.badge, task.pendingQuestion ? asking : STATE_LABEL[task.state]);
    this.badge.className = `badge badge-${task.pendingQuestion ? 'asking' : task.state}`;
    setText(this.idLine, `Task ${task.id}`);
    const finished = isFinished(task.state);
    this.cancelButton.hidden = finished;
    this.retryButton.hidden = !finished;
    this.renderQuestion(task);
    this.renderSummary(task, now);
    this.thread?.show(task);
    this.change?.show(task);
    this.renderFailure(task);
    this.renderResult(task);
    this.renderMeta(task);
    this.renderCommand(task);
  }

  tick(now: number): void {
    if (this.task && !isFinished(this.task.state)) this.renderSummary(this.task, now);
  }

  /** Shows the task's log; `undefined` while it is being fetched. */
  setLog(lines: LogLine[] | undefined): void {
    const finished = this.task !== undefined && isFinished(this.task.state);
    const shown = lines?.slice(-MAX_LOG_LINES) ?? [];
    const key = lines ? `${finished}:${lines.length}:${shown.at(-1)?.time ?? ''}:${shown.at(-1)?.text.length ?? 0}` : 'loading';
    if (key === this.keys.log) return;
    this.keys.log = key;
    // Read only for a real log: the placeholder's call comes while the details are first built, and a
    // read there forces a layout of the whole page before it is done (the first paint waits for it).
    const stick = lines !== undefined && this.log.scrollTop + this.log.clientHeight >= this.log.scrollHeight - 4;
    const text = !lines
      ? '(loading the log…)'
      : shown.length
        ? shown.map((line) => `${line.time.slice(11, 23)} ${line.stream.padEnd(6)} ${line.text}`).join('\n')
        : finished
          ? '(no output kept: the task printed nothing, or it ran before the last restart)'
          : '(no output yet)';
    const earlier = lines && lines.length > shown.length ? `… ${lines.length - shown.length} earlier lines\n` : '';
    this.log.textContent = earlier + text;
    if (stick) this.log.scrollTop = this.log.scrollHeight;
  }

  private renderQuestion(task: TaskSnapshot): void {
    const q = task.pendingQuestion;
    const key = q ? `${task.id}:${q.askId}` : '';
    if (key === this.keys.question) return;
    this.keys.question = key;
    this.question.replaceChildren();
    this.question.hidden = !q;
    if (!q) return;
    const input = h('input', {
      class: 'answer-input',
      attrs: { type: 'text', 'aria-label': 'Your answer', placeholder: 'Type an answer', autocomplete: 'off' },
    });
    const send = (text: string): void => this.actions.answer(task.id, q.askId, text);
    const form = h('form', { class: 'answer-form' }, [input, h('button', { text: 'Answer', class: 'primary', attrs: { type: 'submit' } })]);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      send(input.value);
    });
    // An ACP agent's permission request: its approval card, one button per option (docs/acp.md).
    if (q.approval) {
      appendAll(this.question, [approvalCard(q.approval, send), h('p', { class: 'question-text', text: q.question })]);
      return;
    }
    appendAll(this.question, [
      h('h3', { text: 'The sub-agent asks' }),
      h('p', { class: 'question-text', text: q.question }),
      q.worktree
        ? h('p', {
            class: 'question-context',
            text: questionContext(q),
          })
        : null,
      q.choices?.length
        ? h(
            'div',
            { class: 'choices' },
            q.choices.map((choice) => h('button', { text: choice, attrs: { type: 'button' }, on: { click: () => send(choice) } })),
          )
        : null,
      form,
    ]);
  }

  private renderSummary(task: TaskSnapshot, now: number): void {
    const facts: [string, string][] = [
      ['Status', STATE_LABEL[task.state] + (task.reason && task.state !== 'succeeded' ? ` (${task.reason})` : '') + waitingNote(task)],
      ['Attempt', `${task.attempt} of ${task.maxAttempts}`],
      // Measured by the broker; the agent's own figure, if it sends one, is "Reported duration" under Meta.
      [isFinished(task.state) ? 'Run time' : 'Elapsed', taskTime(task, now)],
      ['Created', formatTime(task.createdAt)],
    ];
    if (task.startedAt) facts.push(['Started', formatTime(task.startedAt)]);
    if (task.endedAt) facts.push(['Ended', formatTime(task.endedAt)]);
    if (typeof task.progress === 'number' && !isFinished(task.state)) facts.push(['Progress', `${Math.round(task.progress)}%`]);
    if (task.exitCode !== undefined && task.exitCode !== null) facts.push(['Exit code', String(task.exitCode)]);
    if (task.signal) facts.push(['Signal', task.signal]);
    if (task.pid !== undefined && !isFinished(task.state)) facts.push(['PID', String(task.pid)]);
    const { malformed, rejected, ignored } = task.counters;
    if (malformed || rejected || ignored) facts.push(['Dropped lines', `${malformed} malformed, ${rejected} rejected, ${ignored} ignored`]);
    const rows = this.summary.children.length === facts.length * 2;
    if (!rows) {
      this.summary.replaceChildren(...facts.flatMap(([term, value]) => [h('dt', { text: term }), h('dd', { text: value })]));
      return;
    }
    facts.forEach(([term, value], i) => {
      setText(this.summary.children[i * 2] as Element, term);
      setText(this.summary.children[i * 2 + 1] as Element, value);
    });
  }

  private renderFailure(task: TaskSnapshot): void {
    const failed = isFailedOrRetrying(task.state);
    const payloadMessage = messageOf(task.result?.data);
    const key = failed ? `${task.id}:${task.state}:${task.attempt}:${task.message ?? ''}:${task.stderrTail?.length ?? 0}` : '';
    if (key === this.keys.failure) return;
    this.keys.failure = key;
    this.failure.replaceChildren();
    this.failure.hidden = !failed;
    if (!failed) return;
    this.failure.append(
      h('h3', { text: task.state === 'cancelled' ? 'Why it was cancelled' : 'What went wrong' }),
      h('p', { class: 'failure-reason', text: failureText(task, payloadMessage) }),
    );
    if (payloadMessage && !(task.message ?? '').includes(payloadMessage))
      this.failure.append(h('p', { class: 'failure-message', text: payloadMessage }));
    if (task.stderrTail) {
      this.failure.append(
        h('h4', { text: 'Last lines of stderr' }),
        h('pre', { class: 'stderr-tail', text: task.stderrTail, tabIndex: 0 }),
      );
    }
  }

  private renderResult(task: TaskSnapshot): void {
    if (task.resultSummary && !task.result) return this.renderFetchedResult(task, task.resultSummary);
    const finalData = task.result ? task.result.data : undefined;
    const hasFinal = task.result !== undefined && 'data' in task.result;
    // A stopped task's work is kept with its failure (model/task.ts PartialResult): shown whole.
    const partial = partialResultOf(task);
    const value = partial ?? (hasFinal ? finalData : task.lastPartial);
    const heading = partial ? 'Partial result (kept when it was stopped)' : hasFinal ? 'Result data' : 'Latest progress data';
    const show = partial !== undefined || hasFinal || task.lastPartial !== undefined;
    const key = show ? `${task.id}:${heading}:${safeStringify(value)}` : '';
    if (key === this.keys.result) return;
    this.keys.result = key;
    this.result.replaceChildren();
    this.result.hidden = !show;
    if (!show) return;
    const copy = h('button', {
      text: 'Copy',
      class: 'quiet',
      attrs: { type: 'button', 'aria-label': `Copy ${heading.toLowerCase()} as JSON` },
    });
    copy.addEventListener('click', () => this.actions.copy(jsonText(value)));
    this.result.append(h('div', { class: 'section-head' }, [h('h3', { text: heading }), copy]), jsonView(value));
    const attachments = hasFinal ? (task.result?.attachments ?? []) : [];
    if (attachments.length > 0) this.result.append(h('h4', { text: 'Attachments' }), this.attachmentList(task.id, attachments));
  }

  /**
   * A big result: its snapshot has only the summary, so the whole payload is fetched once
   * (`loadResult`), with a loading state meanwhile. Above LARGE_RESULT_BYTES it shows as the first
   * RESULT_TEXT_SHOWN characters of its JSON; Copy and Download take all of it.
   */
  private renderFetchedResult(task: TaskSnapshot, summary: NonNullable<TaskSnapshot['resultSummary']>): void {
    if (this.fetched?.id !== task.id) this.fetchResult(task.id);
    const fetched = this.fetched!;
    const key = `${task.id}:fetched:${fetched.state}`;
    if (key === this.keys.result) return;
    this.keys.result = key;
    this.result.replaceChildren();
    this.result.hidden = false;
    const size = formatBytes(summary.bytes);
    const head = h('div', { class: 'section-head' }, [h('h3', { text: `Result data (${size})` })]);
    this.result.append(head);
    if (fetched.state === 'loading') {
      this.result.append(
        h('p', { class: 'result-loading', role: 'status', text: `Loading the whole result (${size})…` }),
        h('pre', { class: 'result-preview', text: `${summary.preview}…`, tabIndex: 0 }),
      );
    } else if (fetched.state === 'error' || fetched.payload === null) {
      const message = fetched.state === 'error' ? fetched.message : 'the result is no longer kept';
      const again = h('button', { text: 'Try again', class: 'quiet', attrs: { type: 'button' } });
      again.addEventListener('click', () => this.fetchResult(task.id, true));
      this.result.append(
        h('p', { class: 'result-error', text: `Could not load the result: ${message}` }),
        h('pre', { class: 'result-preview', text: `${summary.preview}…`, tabIndex: 0 }),
        again,
      );
    } else {
      const value = fetched.payload.data;
      let text: string | undefined;
      const whole = (): string => (text ??= jsonText(value));
      const copy = h('button', { text: 'Copy', class: 'quiet', attrs: { type: 'button', 'aria-label': 'Copy result data as JSON' } });
      copy.addEventListener('click', () => this.actions.copy(whole()));
      const download = h('button', {
        text: 'Download',
        class: 'quiet',
        attrs: { type: 'button', 'aria-label': 'Download the whole result as JSON' },
      });
      download.addEventListener('click', () => this.actions.saveText(`result-${task.id}.json`, whole()));
      head.append(h('span', { class: 'section-buttons' }, [copy, download]));
      if (summary.bytes > LARGE_RESULT_BYTES) {
        const shown = whole().slice(0, RESULT_TEXT_SHOWN);
        this.result.append(
          h('p', {
            class: 'result-cut',
            text: `Showing the first ${formatBytes(shown.length)} of ${size}; Copy or Download for the whole result.`,
          }),
          h('pre', { class: 'result-text', text: shown, tabIndex: 0 }),
        );
      } else {
        this.result.append(jsonView(value));
      }
    }
    const attachments = summary.attachments ?? [];
    if (attachments.length > 0) this.result.append(h('h4', { text: 'Attachments' }), this.attachmentList(task.id, attachments));
  }

  private fetchResult(id: string, again = false): void {
    if (!again && this.fetched?.id === id) return;
    this.fetched = { id, state: 'loading' };
    if (again && this.task?.id === id) this.renderResult(this.task);
    const settle = (fetched: Fetched): void => {
      if (this.fetched?.id !== id || this.task?.id !== id) return;
      this.fetched = fetched;
      this.renderResult(this.task);
    };
    this.actions.loadResult(id).then(
      (payload) => settle({ id, state: 'done', payload }),
      (error: unknown) => settle({ id, state: 'error', message: error instanceof Error ? error.message : String(error) }),
    );
  }

  /** Name, size and a Download button per attachment (the bytes are fetched only on click). */
  private attachmentList(taskId: string, attachments: { name: string; bytes: number }[]): HTMLElement {
    const list = h('ul', { class: 'attachments' });
    for (const { name, bytes } of attachments) {
      const download = h('button', { text: 'Download', class: 'quiet', attrs: { type: 'button', 'aria-label': `Download ${name}` } });
      download.addEventListener('click', () => this.actions.download(taskId, name));
      list.append(
        h('li', {}, [h('span', { class: 'attachment-name', text: name }), h('span', { text: ` ${formatBytes(bytes)} ` }), download]),
      );
    }
    return list;
  }

  private renderMeta(task: TaskSnapshot): void {
    // The caller's annotations (also in the final meta once there is one) show while the task runs too.
    const meta = { ...task.annotations, ...(task.result?.meta ?? task.resultSummary?.meta) } as Record<string, unknown>;
    const key = `${task.id}:${safeStringify(meta)}:${safeStringify(task.usage)}:${safeStringify(task.budget)}`;
    if (key === this.keys.meta) return;
    this.keys.meta = key;
    this.meta.replaceChildren();
    const facts: [string, string][] = [];
    // Live: what the agent reported so far (all attempts), against its budget.
    if (task.usage) facts.push(['Usage', describeUsage(task.usage)]);
    if (task.budget) facts.push(['Budget', describeBudget(task.budget)]);
    const model = modelName(meta);
    if (model) facts.push(['Model', model]);
    const usage = meta.token_usage as Record<string, unknown> | undefined;
    if (usage && typeof usage === 'object') {
      const parts = ['input', 'output', 'total'].filter((k) => typeof usage[k] === 'number').map((k) => `${String(usage[k])} ${k}`);
      if (parts.length) facts.push(['Tokens', parts.join(', ')]);
    }
    if (typeof meta.duration_ms === 'number') facts.push(['Reported duration', formatDuration(meta.duration_ms)]);
    if (typeof meta.channel === 'string') facts.push(['Delivered via', meta.channel]);
    if (typeof meta.attempts === 'number') facts.push(['Attempts', String(meta.attempts)]);
    const known = new Set(['model_used', 'token_usage', 'duration_ms', 'channel', 'attempts']);
    const rest = Object.fromEntries(Object.entries(meta).filter(([k]) => !known.has(k)));
    this.meta.hidden = facts.length === 0 && Object.keys(rest).length === 0;
    if (this.meta.hidden) return;
    appendAll(this.meta, [
      h('h3', { text: 'Meta' }),
      h(
        'dl',
        { class: 'facts' },
        facts.flatMap(([term, value]) => [h('dt', { text: term }), h('dd', { text: value })]),
      ),
      Object.keys(rest).length ? jsonView(rest) : null,
    ]);
  }

  /** The command line, its directory, and the task's tags (the gateway's `source`, `model`, `stream`, `api`, …). */
  private renderCommand(task: TaskSnapshot): void {
    const tags = Object.entries(task.tags ?? {});
    const key = `${task.id}:${safeStringify(task.tags)}`;
    if (key === this.keys.command) return;
    this.keys.command = key;
    this.command.replaceChildren(
      h('h3', { text: 'Command' }),
      h('pre', { class: 'command-line', text: commandLine(task.command, task.args) }),
      h('p', { class: 'cwd' }, ['in ', h('code', { text: task.cwd })]),
    );
    if (tags.length === 0) return;
    this.command.append(
      h('h4', { text: 'Tags' }),
      h(
        'dl',
        { class: 'facts tags' },
        tags.flatMap(([name, value]) => [h('dt', { text: name }), h('dd', { text: value })]),
      ),
    );
  }
}

/**
 * What each section last drew. `undefined` means "not drawn for this task yet": it must differ from
 * every key a section computes — '' included, the key of "nothing to show" — or a section that has
 * nothing to show for the new task would keep the previous task's content.
 */
type SectionKeys = Record<'question' | 'result' | 'failure' | 'meta' | 'command' | 'log', string | undefined>;

function unrendered(): SectionKeys {
  return { question: undefined, result: undefined, failure: undefined, meta: undefined, command: undefined, log: undefined };
}

function messageOf(data: unknown): string | undefined {
  if (data && typeof data === 'object' && typeof (data as Record<string, unknown>).message === 'string') {
    return (data as Record<string, string>).message;
  }
  return undefined;
}

function safeStringify(value: unknown): string {
  try {
    return JSON.stringify(value) ?? 'undefined';
  } catch {
    return String(value);
  }
}

/** `, waiting for Read` while the task waits on its caller's tools (docs/protocol.md §6.1). */
function waitingNote(task: TaskSnapshot): string {
  const waiting = isFinished(task.state) ? undefined : waitingForTools(task.pendingToolCalls);
  return waiting ? `, ${waiting}` : '';
}
