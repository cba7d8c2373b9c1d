/**
 * The panel's small feedback: a toast for messages and errors, copying to the clipboard, and files
 * handed to the browser as downloads. No state of the panel's own: the panel (./panel.ts) wires them.
 */
import type { AttachmentDownload } from '../bridge/contract.js';

/** How long a toast shows: an error longer, so it can be read. */
const TOAST_MS = 2500;
const ERROR_TOAST_MS = 6000;

/** A toast in `el`: one message at a time, each replacing the last. */
export function toaster(el: HTMLElement): { toast(message: string, isError?: boolean): void; showError(error: unknown): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const toast = (message: string, isError = false): void => {
    el.textContent = message;
    el.classList.toggle('error', isError);
    el.classList.add('visible');
    clearTimeout(timer);
    timer = setTimeout(() => el.classList.remove('visible'), isError ? ERROR_TOAST_MS : TOAST_MS);
  };
  return { toast, showError: (error) => toast(error instanceof Error ? error.message : String(error), true) };
}

/** Copies `text`, through the clipboard API or (without it, or refused) a selected textarea; says how it went. */
export function copyText(text: string, toast: (message: string) => void): void {
  const fallback = (): void => {
    const area = document.createElement('textarea');
    area.value = text;
    document.body.append(area);
    area.select();
    const ok = document.execCommand('copy');
    area.remove();
    toast(ok ? 'Copied' : 'Copy failed');
  };
  if (navigator.clipboard) navigator.clipboard.writeText(text).then(() => toast('Copied'), fallback);
  else fallback();
}

/** Hands an attachment to the browser as a file download. */
export function saveFile(file: AttachmentDownload): void {
  const binary = atob(file.base64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  saveBlob(file.name, new Blob([bytes], { type: file.encoding === 'utf8' ? 'text/plain;charset=utf-8' : 'application/octet-stream' }));
}

/** Hands `blob` to the browser as a file download named `name`. */
export function saveBlob(name: string, blob: Blob): void {
  const url = URL.createObjectURL(blob);
  const link = Object.assign(document.createElement('a'), { href: url, download: name });
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
