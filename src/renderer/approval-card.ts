/**
 * The approval card: an ACP agent's permission request as the panel shows it (docs/acp.md) — the
 * tool call's kind, title and target (its command or paths), a flag when the agent never announced
 * it, and one button per option the agent offers, named as the agent names it. Agent text goes in as
 * text, never as markup.
 */
import type { PendingQuestion } from '../model/task.js';
import { approvalTarget } from '../model/questions.js';
import { h } from './dom.js';

type Approval = NonNullable<PendingQuestion['approval']>;

/** `send` answers with the option's name (the question's choice). */
export function approvalCard(approval: Approval, send: (choice: string) => void): HTMLElement {
  const target = approvalTarget(approval);
  const rows: Array<[string, string]> = [
    ['Tool', approval.kind],
    ['Action', approval.title],
    ...(target ? ([[approval.command !== undefined ? 'Command' : 'Paths', target]] as Array<[string, string]>) : []),
  ];
  return h('section', { class: 'approval-card', attrs: { 'aria-label': 'Approval' } }, [
    h('h3', { text: 'Needs approval' }),
    h(
      'dl',
      { class: 'approval-facts' },
      rows.flatMap(([name, value]) => [h('dt', { text: name }), h('dd', { text: value })]),
    ),
    approval.unannounced ? h('p', { class: 'approval-unannounced', text: 'The agent never announced this tool call.' }) : null,
    h(
      'div',
      { class: 'choices approval-options' },
      approval.options.map((option) =>
        h('button', {
          text: option.name,
          class: option.kind.startsWith('allow') ? 'primary' : '',
          attrs: { type: 'button', 'data-option-id': option.option_id, 'data-kind': option.kind },
          on: { click: () => send(option.name) },
        }),
      ),
    ),
  ]);
}
