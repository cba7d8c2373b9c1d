/**
 * The views in views.js (./views-entry.ts), for panel.ts: loaded once, after the first paint or when
 * first wanted, whichever comes first.
 */
import { loadScript } from './lazy-script.js';
import type { Views } from './views-entry.js';

export type { Views };

/** The views' classes (a second call waits for the same file). */
export function loadViews(): Promise<Views> {
  return loadScript<Views>('views.js', 'backchannelViews');
}
