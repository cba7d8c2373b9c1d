/**
 * Pretty, collapsible JSON built from elements (`<details>` per object/array) with text nodes only.
 * Bounded: a 10 MB result renders its first nodes and says how much it left out; Copy copies it all.
 */
import { h } from './dom.js';

/** Nodes rendered per view; enough to read, small enough to stay instant. */
const MAX_NODES = 1500;
/** Characters of one string shown before it is cut (the copy keeps all of it). */
const MAX_STRING = 2000;
/** Levels open by default. */
const OPEN_DEPTH = 2;

export function jsonView(value: unknown): HTMLElement {
  const budget = { nodes: MAX_NODES };
  return h('div', { class: 'json', role: 'tree' }, [node(value, 0, budget)]);
}

function node(value: unknown, depth: number, budget: { nodes: number }): HTMLElement {
  budget.nodes--;
  if (value === null || typeof value !== 'object') return primitive(value);
  const entries: [string, unknown][] = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  const isArray = Array.isArray(value);
  const summary = isArray
    ? `[ ${entries.length} item${entries.length === 1 ? '' : 's'} ]`
    : `{ ${entries.length} key${entries.length === 1 ? '' : 's'} }`;
  if (entries.length === 0) return h('span', { class: 'json-empty', text: isArray ? '[]' : '{}' });
  const children = h('div', { class: 'json-children' });
  let shown = 0;
  for (const [key, child] of entries) {
    if (budget.nodes <= 0) break;
    children.append(
      h('div', { class: 'json-entry', role: 'treeitem' }, [
        h('span', { class: isArray ? 'json-index' : 'json-key', text: isArray ? `${key}:` : `${JSON.stringify(key)}:` }),
        ' ',
        node(child, depth + 1, budget),
      ]),
    );
    shown++;
  }
  if (shown < entries.length) {
    children.append(h('div', { class: 'json-more', text: `… ${entries.length - shown} more not shown (use Copy for the whole value)` }));
  }
  const details = h('details', { class: 'json-node' }, [h('summary', { text: summary }), children]);
  details.open = depth < OPEN_DEPTH;
  return details;
}

function primitive(value: unknown): HTMLElement {
  if (typeof value === 'string') {
    const text =
      value.length > MAX_STRING ? `${JSON.stringify(value.slice(0, MAX_STRING))}… (${value.length} characters)` : JSON.stringify(value);
    return h('span', { class: 'json-string', text });
  }
  const type = value === null ? 'null' : typeof value;
  return h('span', { class: `json-${type}`, text: value === undefined ? 'undefined' : String(value) });
}

/** Text for the Copy button: the whole value, pretty-printed. */
export function jsonText(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? 'undefined';
}
