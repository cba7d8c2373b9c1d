/**
 * "New task" dialog: start from a preset (a demo agent, a template's agent) or a recent command line,
 * or type one. The command is an executable plus one argument per line, never a shell string.
 * The same dialog follows up a finished coding task (`openFollowUp`): its command line, a new input,
 * in its worktree (`worktree.reuse`, docs/coding-agents.md).
 */
import type { BridgeInfo, SubmitRequest, TaskSnapshot } from '../bridge/contract.js';
import { h } from './dom.js';
import { commandLine } from './format.js';

export class NewTaskDialog {
  readonly dialog: HTMLDialogElement;
  private readonly source = h('select', { attrs: { id: 'new-source', 'aria-label': 'Start from' } });
  private readonly command = h('input', {
    attrs: { id: 'new-command', type: 'text', required: '', autocomplete: 'off', spellcheck: 'false' },
  });
  private readonly args = h('textarea', { attrs: { id: 'new-args', rows: '3', spellcheck: 'false' } });
  private readonly cwd = h('input', {
    attrs: { id: 'new-cwd', type: 'text', autocomplete: 'off', spellcheck: 'false', placeholder: 'default: where Backchannel runs' },
  });
  private readonly label = h('input', {
    attrs: { id: 'new-label', type: 'text', autocomplete: 'off', placeholder: 'default: the command line' },
  });
  private readonly input = h('textarea', { attrs: { id: 'new-input', rows: '2', spellcheck: 'false', placeholder: 'optional JSON' } });
  private readonly retries = h('input', { attrs: { id: 'new-retries', type: 'number', min: '0', max: '10', step: '1', value: '0' } });
  /** A coding task: run in a git worktree of its own (`SubmitRequest.worktree`, docs/coding-agents.md). */
  private readonly worktree = h('input', { attrs: { id: 'new-worktree', type: 'checkbox' } });
  private readonly base = h('input', {
    attrs: { id: 'new-base', type: 'text', autocomplete: 'off', spellcheck: 'false', placeholder: 'default: HEAD of the repository' },
  });
  private readonly error = h('p', { class: 'form-error', role: 'alert' });
  private readonly title = h('h2', { text: 'New task', attrs: { id: 'new-title' } });
  private choices: SubmitRequest[] = [];
  /** The `acp` of the preset the form was filled from (a named ACP agent's). */
  private acp: SubmitRequest['acp'];
  /** The task being followed up (its worktree is reused), while the dialog does that. */
  private followUp: { id: string; label: string } | undefined;

  constructor(private readonly submit: (request: SubmitRequest) => Promise<void>) {
    const field = (id: string, text: string, control: HTMLElement, hint?: string): HTMLElement =>
      h('div', { class: 'field' }, [h('label', { text, attrs: { for: id } }), control, hint ? h('small', { text: hint }) : null]);
    const form = h('form', { class: 'new-task', attrs: { 'aria-labelledby': 'new-title' } }, [
      this.title,
      field('new-source', 'Start from', this.source),
      field('new-command', 'Command', this.command, 'An executable, or a .js/.mjs file run with Node'),
      field('new-args', 'Arguments', this.args, 'One per line'),
      field('new-cwd', 'Working directory', this.cwd),
      field('new-label', 'Label', this.label),
      field('new-input', 'Input', this.input),
      field('new-retries', 'Retries', this.retries),
      h('div', { class: 'field' }, [
        h('div', { class: 'worktree-field' }, [
          this.worktree,
          h('label', { text: 'Run in a git worktree', attrs: { for: 'new-worktree' } }),
        ]),
        h('small', {
          text: 'A branch of its own from the base, in a directory Backchannel owns; your checkout is not touched until you apply',
        }),
      ]),
      field('new-base', 'Base ref', this.base, 'A branch, tag or commit of the repository containing the working directory'),
      this.error,
      h('div', { class: 'dialog-buttons' }, [
        h('button', {
          text: 'Cancel',
          class: 'quiet',
          attrs: { type: 'button', value: 'cancel' },
          on: { click: () => this.dialog.close() },
        }),
        h('button', { text: 'Start task', class: 'primary', attrs: { type: 'submit' } }),
      ]),
    ]);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.onSubmit();
    });
    this.source.addEventListener('change', () => this.fill(this.choices[Number(this.source.value)]));
    this.worktree.addEventListener('change', () => (this.base.disabled = !this.worktree.checked || this.followUp !== undefined));
    this.dialog = h('dialog', { class: 'dialog', attrs: { id: 'new-task-dialog' } }, [form]);
  }

  open(info: BridgeInfo): void {
    this.followUp = undefined;
    this.title.textContent = 'New task';
    this.choices = [];
    const options: HTMLElement[] = [h('option', { text: 'Empty', attrs: { value: '-1' } })];
    const presets = info.presets.map((preset) => {
      this.choices.push(preset.request);
      return h('option', { text: `${preset.name} — ${preset.description}`, attrs: { value: String(this.choices.length - 1) } });
    });
    if (presets.length) options.push(h('optgroup', { attrs: { 'aria-label': 'Presets' } }, presets));
    const recent = info.recent.map((request) => {
      this.choices.push(request);
      return h('option', { text: commandLine(request.command, request.args ?? []), attrs: { value: String(this.choices.length - 1) } });
    });
    if (recent.length) options.push(h('optgroup', { attrs: { 'aria-label': 'Recent commands' } }, recent));
    for (const group of options.filter((o) => o.tagName === 'OPTGROUP'))
      (group as HTMLOptGroupElement).label = group.getAttribute('aria-label') ?? '';
    this.source.replaceChildren(...options);
    const first = info.presets.length ? 0 : info.recent.length ? 0 : -1;
    this.source.value = String(first);
    this.fill(this.choices[first]);
    this.error.textContent = '';
    this.dialog.showModal();
    (first >= 0 ? this.source : this.command).focus();
  }

  /**
   * Follows up `task` (a finished coding task, the newest run of its thread): its command line and
   * working directory, a new input, in its worktree.
   */
  openFollowUp(info: BridgeInfo, task: Pick<TaskSnapshot, 'id' | 'label' | 'command' | 'args' | 'cwd'>): void {
    this.open(info);
    this.followUp = { id: task.id, label: task.label };
    this.title.textContent = `Follow up ${task.label}`;
    this.source.value = '-1';
    this.fill({ command: task.command, args: task.args, cwd: task.cwd, label: `Follow-up of ${task.label}`, worktree: true });
    this.input.focus();
  }

  private fill(request: SubmitRequest | undefined): void {
    // A named ACP agent's preset runs as an ACP task (docs/acp.md): kept as the preset says, not a field of the form.
    this.acp = request?.acp;
    this.command.value = request?.command ?? '';
    this.args.value = (request?.args ?? []).join('\n');
    this.cwd.value = request?.cwd ?? '';
    this.label.value = request?.label ?? '';
    this.input.value = request?.input === undefined ? '' : JSON.stringify(request.input);
    this.retries.value = String(request?.retries ?? 0);
    const worktree = request?.worktree;
    this.worktree.checked = worktree !== undefined && worktree !== false;
    this.base.value = typeof worktree === 'object' ? (worktree.base ?? '') : '';
    this.base.disabled = !this.worktree.checked;
    // A follow-up continues in the worktree it had: no other worktree, no base.
    const follow = this.followUp;
    this.worktree.disabled = follow !== undefined;
    this.base.placeholder = follow ? `continues in the worktree of ${follow.label}` : 'default: HEAD of the repository';
    if (follow) {
      this.worktree.checked = true;
      this.base.value = '';
      this.base.disabled = true;
    }
  }

  private async onSubmit(): Promise<void> {
    const request: SubmitRequest = { command: this.command.value.trim() };
    const args = this.args.value.split('\n').filter((line) => line !== '');
    if (args.length) request.args = args;
    if (this.cwd.value.trim()) request.cwd = this.cwd.value.trim();
    if (this.label.value.trim()) request.label = this.label.value.trim();
    if (this.input.value.trim()) {
      try {
        request.input = JSON.parse(this.input.value);
      } catch {
        this.error.textContent = 'Input must be valid JSON (or empty).';
        return;
      }
    }
    const retries = Number(this.retries.value || 0);
    if (retries > 0) request.retries = retries;
    if (this.acp !== undefined && this.acp !== false) request.acp = this.acp;
    if (this.followUp) request.worktree = { reuse: this.followUp.id };
    else if (this.worktree.checked) request.worktree = this.base.value.trim() ? { base: this.base.value.trim() } : true;
    try {
      await this.submit(request);
      this.dialog.close();
    } catch (error) {
      this.error.textContent = (error as Error).message;
    }
  }
}
