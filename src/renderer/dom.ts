/**
 * The only way the panel creates elements. Text goes in through `textContent`, never as markup:
 * task labels, payloads and logs come from sub-agents and must show as text, whatever they contain.
 */
type Child = Node | string | null | undefined | false;

export interface ElementProps {
  class?: string;
  text?: string;
  title?: string;
  role?: string;
  tabIndex?: number;
  hidden?: boolean;
  /** `aria-*` and `data-*` attributes, and a few safe plain ones (`type`, `for`, `name`...). */
  attrs?: Record<string, string>;
  on?: { [K in keyof HTMLElementEventMap]?: (event: HTMLElementEventMap[K]) => void };
}

const SAFE_ATTRIBUTE =
  /^(aria-[a-z-]+|data-[a-z-]+|type|for|name|id|value|placeholder|autocomplete|spellcheck|rows|min|max|step|inputmode|list|open|disabled|required|readonly|lang|dir)$/;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: ElementProps = {},
  children: Child[] = [],
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (props.class) el.className = props.class;
  if (props.text !== undefined) el.textContent = props.text;
  if (props.title !== undefined) el.title = props.title;
  if (props.role) el.setAttribute('role', props.role);
  if (props.tabIndex !== undefined) el.tabIndex = props.tabIndex;
  if (props.hidden) el.hidden = true;
  for (const [name, value] of Object.entries(props.attrs ?? {})) {
    if (!SAFE_ATTRIBUTE.test(name)) throw new Error(`attribute ${name} is not allowed`);
    el.setAttribute(name, value);
  }
  for (const [type, handler] of Object.entries(props.on ?? {})) {
    el.addEventListener(type, handler as EventListener);
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return el;
}

/** `append` that skips empty children. */
export function appendAll(el: Element, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child);
  }
}

/** Sets text only when it changed (cheap re-renders of 200 rows). */
export function setText(el: Element, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}

export function byId<T extends HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing from index.html`);
  return el as T;
}
