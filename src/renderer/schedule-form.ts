/**
 * The "New schedule" dialog: a name, when it fires (every <duration>, or cron with a time zone), its
 * overlap and catch-up policies, and what it runs — a command line (an executable plus one argument
 * per line, never a shell string), filled from a preset or a recent command or typed. The hub checks
 * the schedule and judges its command by the run policy (the `schedule` door); whatever it refuses
 * shows here as its one line and the dialog stays open. Only durations are read here (`30s`, `7d`:
 * the terminal's `parseDuration`), so a typo is named before anything is sent.
 */
import type { BridgeInfo, ScheduleRequest, SubmitRequest } from '../bridge/contract.js';
import { parseDuration } from '../model/duration.js';
import { h } from './dom.js';
import { commandLine } from './format.js';

/** The policies' values, default first (docs/schedules.md, "Policies"). */
const OVERLAP: Array<[string, string]> = [
  ['skip', 'skip (default)'],
  ['buffer-one', 'buffer-one'],
  ['cancel-other', 'cancel-other'],
  ['allow', 'allow'],
];
const CATCH_UP: Array<[string, string]> = [
  ['latest', 'latest (default)'],
  ['none', 'none'],
  ['all', 'all'],
];

export class ScheduleDialog {
  readonly dialog: HTMLDialogElement;
  private readonly name = input('sched-name', { placeholder: 'nightly-review', autocomplete: 'off', spellcheck: 'false', required: '' });
  private readonly every = h('input', { attrs: { id: 'sched-kind-every', type: 'radio', name: 'sched-kind', value: 'every' } });
  private readonly cron = h('input', { attrs: { id: 'sched-kind-cron', type: 'radio', name: 'sched-kind', value: 'cron' } });
  private readonly interval = input('sched-every', { placeholder: '30s, 5m, 1h', autocomplete: 'off', spellcheck: 'false' });
  private readonly expression = input('sched-cron', { placeholder: '0 9 * * 1-5', autocomplete: 'off', spellcheck: 'false' });
  private readonly tz = input('sched-tz', {
    placeholder: "default: the hub's zone",
    autocomplete: 'off',
    spellcheck: 'false',
    list: 'sched-zones',
  });
  private readonly zones = h('datalist', { attrs: { id: 'sched-zones' } });
  private readonly overlap = choice('sched-overlap', OVERLAP);
  private readonly catchUp = choice('sched-catch-up', CATCH_UP);
  private readonly window = input('sched-window', { placeholder: 'default: 7d', autocomplete: 'off', spellcheck: 'false' });
  private readonly source = h('select', { attrs: { id: 'sched-source', 'aria-label': 'Start from' } });
  private readonly command = input('sched-command', { autocomplete: 'off', spellcheck: 'false', required: '' });
  private readonly args = h('textarea', { attrs: { id: 'sched-args', rows: '3', spellcheck: 'false' } });
  private readonly cwd = input('sched-cwd', { placeholder: "default: the hub's directory", autocomplete: 'off', spellcheck: 'false' });
  private readonly maxTokens = input('sched-max-tokens', { type: 'number', min: '1', step: '1', placeholder: 'none' });
  private readonly maxCost = input('sched-max-cost', { type: 'number', min: '0', step: 'any', placeholder: 'none' });
  private readonly error = h('p', { class: 'form-error', role: 'alert' });
  private readonly submitButton = h('button', { text: 'Create schedule', class: 'primary', attrs: { type: 'submit' } });
  private choices: SubmitRequest[] = [];
  /** What the preset the form was filled from adds beside its command line (a named ACP agent's acp and prompt). */
  private fromPreset: Pick<SubmitRequest, 'acp' | 'input'> | undefined;
  /** Names of the schedules there are: adding one of them replaces it, so the form asks first. */
  private taken = new Set<string>();
  /** The name the person agreed to replace (pressed Replace schedule with it). */
  private replacing: string | undefined;

  constructor(private readonly add: (request: ScheduleRequest) => Promise<void>) {
    const field = (id: string, text: string, control: HTMLElement, hint?: string): HTMLElement =>
      h('div', { class: 'field' }, [h('label', { text, attrs: { for: id } }), control, hint ? h('small', { text: hint }) : null]);
    const kind = h('div', { class: 'field', role: 'radiogroup', attrs: { 'aria-label': 'Fires' } }, [
      h('span', { class: 'field-label', text: 'Fires' }),
      h('div', { class: 'sched-kinds' }, [
        this.every,
        h('label', { text: 'At an interval', attrs: { for: 'sched-kind-every' } }),
        this.cron,
        h('label', { text: 'At cron times', attrs: { for: 'sched-kind-cron' } }),
      ]),
    ]);
    const form = h('form', { class: 'new-task new-schedule', attrs: { 'aria-labelledby': 'sched-title' } }, [
      h('h2', { text: 'New schedule', attrs: { id: 'sched-title' } }),
      field('sched-name', 'Name', this.name, 'Letters, digits, ".", "_" and "-" (a name in use: you are asked before it is replaced)'),
      kind,
      h('div', { class: 'field sched-every-field' }, [h('label', { text: 'Every', attrs: { for: 'sched-every' } }), this.interval]),
      h('div', { class: 'field-row sched-cron-field' }, [
        field('sched-cron', 'Cron', this.expression, '5 fields, or 6 with seconds first'),
        field('sched-tz', 'Time zone', this.tz, 'An IANA zone, e.g. Europe/Paris'),
      ]),
      h('div', { class: 'field-row' }, [
        field(
          'sched-overlap',
          'Overlap',
          this.overlap,
          'A fire while a run is still active: skipped, buffered, or it cancels or joins the run',
        ),
        field('sched-catch-up', 'Catch-up', this.catchUp, 'Fires missed while the hub was down: run the latest, none, or all'),
      ]),
      field('sched-window', 'Catch-up window', this.window, 'Misses older than this never run'),
      field('sched-source', 'Start from', this.source),
      field('sched-command', 'Command', this.command, 'An executable, or a .js/.mjs file run with Node'),
      field('sched-args', 'Arguments', this.args, 'One per line'),
      field('sched-cwd', 'Working directory', this.cwd),
      h('div', { class: 'field-row' }, [
        field('sched-max-tokens', 'Max tokens per run', this.maxTokens),
        field('sched-max-cost', 'Max cost per run (USD)', this.maxCost),
      ]),
      this.zones,
      this.error,
      h('div', { class: 'dialog-buttons' }, [
        h('button', { text: 'Cancel', class: 'quiet', attrs: { type: 'button' }, on: { click: () => this.dialog.close() } }),
        this.submitButton,
      ]),
    ]);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.onSubmit();
    });
    for (const radio of [this.every, this.cron]) radio.addEventListener('change', () => this.showKind());
    this.source.addEventListener('change', () => this.fill(this.choices[Number(this.source.value)]));
    this.name.addEventListener('input', () => this.setReplacing(undefined));
    this.dialog = h('dialog', { class: 'dialog', attrs: { id: 'new-schedule-dialog' } }, [form]);
  }

  /**
   * Opens an empty form; the presets and recent commands of `info` are offered to start from. `names`
   * are the schedules there are (the form asks before it replaces one).
   */
  open(info: BridgeInfo, names: Iterable<string> = []): void {
    this.taken = new Set(names);
    this.setReplacing(undefined);
    this.choices = [];
    const options: HTMLElement[] = [h('option', { text: 'Empty', attrs: { value: '-1' } })];
    const group = (label: string, requests: Array<[string, SubmitRequest]>): void => {
      if (requests.length === 0) return;
      const el = h('optgroup', {}, []);
      el.label = label;
      for (const [text, request] of requests) {
        this.choices.push(request);
        el.append(h('option', { text, attrs: { value: String(this.choices.length - 1) } }));
      }
      options.push(el);
    };
    group(
      'Presets',
      info.presets.map((preset) => [`${preset.name} — ${preset.description}`, preset.request]),
    );
    group(
      'Recent commands',
      info.recent.map((request) => [commandLine(request.command, request.args ?? []), request]),
    );
    this.source.replaceChildren(...options);
    this.source.value = '-1';
    this.fill(undefined);
    for (const el of [this.name, this.interval, this.expression, this.tz, this.window, this.maxTokens, this.maxCost]) el.value = '';
    this.overlap.value = 'skip';
    this.catchUp.value = 'latest';
    this.every.checked = true;
    this.showKind();
    if (this.zones.childElementCount === 0) {
      const zones = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
      this.zones.append(...zones.map((zone) => h('option', { attrs: { value: zone } })));
    }
    this.error.textContent = '';
    this.dialog.showModal();
    this.name.focus();
  }

  private setReplacing(name: string | undefined): void {
    this.replacing = name;
    this.submitButton.textContent = name === undefined ? 'Create schedule' : 'Replace schedule';
  }

  private showKind(): void {
    const cron = this.cron.checked;
    (this.interval.closest('.field') as HTMLElement).hidden = cron;
    (this.expression.closest('.field-row') as HTMLElement).hidden = !cron;
  }

  private fill(request: SubmitRequest | undefined): void {
    // A named ACP agent's preset fires as an ACP task with its prompt (docs/acp.md): kept as the preset says.
    this.fromPreset = request?.acp ? { acp: request.acp, ...(request.input !== undefined ? { input: request.input } : {}) } : undefined;
    this.command.value = request?.command ?? '';
    this.args.value = (request?.args ?? []).join('\n');
    this.cwd.value = request?.cwd ?? '';
  }

  /** The request the form describes, or the one line saying what to fix. */
  private request(): ScheduleRequest | string {
    const command = this.command.value.trim();
    if (!command) return 'Command: name the program to run.';
    const args = this.args.value.split('\n').filter((line) => line !== '');
    const request: ScheduleRequest = { name: this.name.value.trim(), command: [command, ...args] };
    if (this.cron.checked) {
      request.cron = this.expression.value.trim();
      if (this.tz.value.trim()) request.tz = this.tz.value.trim();
    } else {
      const every = parseDuration(this.interval.value);
      if (every === undefined) return `Every: "${this.interval.value.trim()}" is not a duration such as 30s, 5m or 1h.`;
      request.everyMs = every;
    }
    request.overlap = this.overlap.value as ScheduleRequest['overlap'];
    request.catchUp = this.catchUp.value as ScheduleRequest['catchUp'];
    if (this.window.value.trim()) {
      const window = parseDuration(this.window.value);
      if (window === undefined) return `Catch-up window: "${this.window.value.trim()}" is not a duration such as 12h or 7d.`;
      request.catchUpWindowMs = window;
    }
    if (this.cwd.value.trim()) request.cwd = this.cwd.value.trim();
    if (this.maxTokens.value) request.maxTokens = Number(this.maxTokens.value);
    if (this.maxCost.value) request.maxCostUsd = Number(this.maxCost.value);
    if (this.fromPreset) Object.assign(request, this.fromPreset);
    return request;
  }

  private async onSubmit(): Promise<void> {
    const request = this.request();
    if (typeof request === 'string') {
      this.error.textContent = request;
      return;
    }
    if (this.taken.has(request.name) && this.replacing !== request.name) {
      this.setReplacing(request.name);
      this.error.textContent = `A schedule named ${request.name} exists: Replace schedule replaces it (its fire history stays).`;
      return;
    }
    this.error.textContent = '';
    try {
      await this.add(request);
      this.dialog.close();
    } catch (error) {
      this.error.textContent = error instanceof Error ? error.message : String(error);
    }
  }
}

function input(id: string, attrs: Record<string, string> = {}): HTMLInputElement {
  return h('input', { attrs: { id, type: 'text', ...attrs } });
}

function choice(id: string, options: Array<[string, string]>): HTMLSelectElement {
  return h(
    'select',
    { attrs: { id } },
    options.map(([value, text]) => h('option', { text, attrs: { value } })),
  );
}
