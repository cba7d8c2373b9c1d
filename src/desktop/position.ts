/** Where the panel window goes: next to the tray icon when its position is known. Pure, so it is testable. */

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** Gap between the tray icon and the panel. */
const MARGIN = 6;

/**
 * The panel's bounds anchored to the tray icon (below it for a top bar, above it for a bottom
 * bar, beside it for a side bar), clamped into the work area; undefined when the tray position is
 * unknown (Linux StatusNotifierItem reports an empty rectangle), in which case the caller shows a
 * normal window.
 */
export function anchoredBounds(tray: Rect, workArea: Rect, size: { width: number; height: number }): Rect | undefined {
  if (tray.width <= 0 || tray.height <= 0) return undefined;
  const centerX = tray.x + tray.width / 2;
  const centerY = tray.y + tray.height / 2;
  const clampX = (x: number): number =>
    Math.round(Math.min(Math.max(x, workArea.x + MARGIN), workArea.x + workArea.width - size.width - MARGIN));
  const clampY = (y: number): number =>
    Math.round(Math.min(Math.max(y, workArea.y + MARGIN), workArea.y + workArea.height - size.height - MARGIN));
  let x: number;
  let y: number;
  if (centerY < workArea.y + workArea.height / 3 && tray.y <= workArea.y) {
    x = clampX(centerX - size.width / 2); // bar at the top
    y = workArea.y + MARGIN;
  } else if (tray.y >= workArea.y + workArea.height) {
    x = clampX(centerX - size.width / 2); // bar at the bottom
    y = workArea.y + workArea.height - size.height - MARGIN;
  } else if (tray.x >= workArea.x + workArea.width) {
    x = workArea.x + workArea.width - size.width - MARGIN; // bar on the right
    y = clampY(centerY - size.height / 2);
  } else if (tray.x + tray.width <= workArea.x) {
    x = workArea.x + MARGIN; // bar on the left
    y = clampY(centerY - size.height / 2);
  } else {
    // The icon sits inside the work area (some Linux docks): open toward the screen's middle.
    x = clampX(centerX - size.width / 2);
    y = centerY < workArea.y + workArea.height / 2 ? clampY(tray.y + tray.height + MARGIN) : clampY(tray.y - size.height - MARGIN);
  }
  return { x, y, width: size.width, height: size.height };
}
