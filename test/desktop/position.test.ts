import { describe, expect, test } from 'vitest';
import { anchoredBounds, type Rect } from '../../src/desktop/position.js';

const size = { width: 400, height: 600 };
const screen: Rect = { x: 0, y: 0, width: 1920, height: 1080 };

describe('anchoredBounds', () => {
  test('an unknown tray position (Linux AppIndicator) gives no anchor, so a normal window is used', () => {
    expect(anchoredBounds({ x: 0, y: 0, width: 0, height: 0 }, screen, size)).toBeUndefined();
  });

  test('a top bar (macOS menu bar) puts the panel under the icon, inside the screen', () => {
    const workArea = { x: 0, y: 25, width: 1920, height: 1055 };
    const bounds = anchoredBounds({ x: 1800, y: 0, width: 22, height: 22 }, workArea, size);
    expect(bounds).toEqual({ x: 1920 - 400 - 6, y: 31, width: 400, height: 600 });
  });

  test('a bottom taskbar (Windows) puts the panel above the icon', () => {
    const workArea = { x: 0, y: 0, width: 1920, height: 1040 };
    const bounds = anchoredBounds({ x: 1700, y: 1045, width: 24, height: 24 }, workArea, size);
    expect(bounds).toEqual({ x: 1712 - 200, y: 1040 - 600 - 6, width: 400, height: 600 });
  });

  test('a left dock puts the panel beside it', () => {
    const workArea = { x: 64, y: 0, width: 1856, height: 1080 };
    const bounds = anchoredBounds({ x: 20, y: 900, width: 24, height: 24 }, workArea, size);
    expect(bounds?.x).toBe(70);
    expect(bounds!.y + bounds!.height).toBeLessThanOrEqual(1080);
  });

  test('the panel never leaves the work area', () => {
    const bounds = anchoredBounds({ x: 5, y: 0, width: 22, height: 22 }, { x: 0, y: 25, width: 1920, height: 1055 }, size)!;
    expect(bounds.x).toBeGreaterThanOrEqual(0);
    expect(bounds.y).toBeGreaterThanOrEqual(25);
  });
});
