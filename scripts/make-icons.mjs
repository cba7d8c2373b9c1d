#!/usr/bin/env node
// Draws Backchannel's icons (a ring around a dot: a task with a channel back) and writes them as
// PNGs to assets/, with a ~60-line PNG encoder (zlib + CRC-32) so no image library is needed.
//   node scripts/make-icons.mjs
import { deflateSync } from 'node:zlib';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const out = fileURLToPath(new URL('../assets/', import.meta.url));
mkdirSync(out, { recursive: true });

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const byte of buf) c = CRC_TABLE[(c ^ byte) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}
/** RGBA pixels (Uint8Array, width*height*4) → PNG bytes. */
function encodePng(width, height, rgba) {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // RGBA
  const raw = Buffer.alloc((width * 4 + 1) * height);
  for (let y = 0; y < height; y++) {
    raw[y * (width * 4 + 1)] = 0; // filter: none
    Buffer.from(rgba.buffer, y * width * 4, width * 4).copy(raw, y * (width * 4 + 1) + 1);
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw, { level: 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/**
 * Renders shapes given as coverage functions of (x, y) in 0..1 units, 4×4 supersampled.
 * layers: [{ color: [r,g,b], inside(x, y) → boolean }], painted in order.
 */
function render(size, layers) {
  const rgba = new Uint8Array(size * size * 4);
  const S = 4;
  for (let py = 0; py < size; py++) {
    for (let px = 0; px < size; px++) {
      let r = 0,
        g = 0,
        b = 0,
        a = 0;
      for (const layer of layers) {
        let hits = 0;
        for (let sy = 0; sy < S; sy++)
          for (let sx = 0; sx < S; sx++) {
            if (layer.inside((px + (sx + 0.5) / S) / size, (py + (sy + 0.5) / S) / size)) hits++;
          }
        const cov = hits / (S * S);
        if (cov === 0) continue;
        // "over" compositing, straight alpha
        const na = cov + a * (1 - cov);
        r = (layer.color[0] * cov + r * a * (1 - cov)) / na;
        g = (layer.color[1] * cov + g * a * (1 - cov)) / na;
        b = (layer.color[2] * cov + b * a * (1 - cov)) / na;
        a = na;
      }
      const i = (py * size + px) * 4;
      rgba[i] = Math.round(r);
      rgba[i + 1] = Math.round(g);
      rgba[i + 2] = Math.round(b);
      rgba[i + 3] = Math.round(a * 255);
    }
  }
  return encodePng(size, size, rgba);
}

const dist = (x, y, cx, cy) => Math.hypot(x - cx, y - cy);
const ring = (inner, outer) => (x, y) => {
  const d = dist(x, y, 0.5, 0.5);
  return d >= inner && d <= outer;
};
const disc = (radius) => (x, y) => dist(x, y, 0.5, 0.5) <= radius;
/** A ring with a gap at the top right: the "back channel". */
const openRing = (inner, outer) => (x, y) => ring(inner, outer)(x, y) && !(x > 0.5 && y < 0.5 && x - 0.5 > (0.5 - y) * 0.35);
const arrow = (x, y) => {
  // small notch pointing back into the ring at the gap
  const tx = 0.5 + 0.36,
    ty = 0.5 - 0.2;
  return Math.abs(x - tx) + Math.abs(y - ty) < 0.11 && y > ty - 0.11;
};
const glyph = (color) => [
  { color, inside: openRing(0.27, 0.42) },
  { color, inside: arrow },
  { color, inside: disc(0.13) },
];

const write = (name, size, layers) => writeFileSync(join(out, name), render(size, layers));
const DARK = [32, 32, 36];
const LIGHT = [240, 240, 245];
const BLUE = [10, 102, 216];
for (const [suffix, scale] of [
  ['', 16],
  ['@2x', 32],
]) {
  write(`tray-light${suffix}.png`, scale, glyph(DARK)); // for light bars
  write(`tray-dark${suffix}.png`, scale, glyph(LIGHT)); // for dark bars
  write(`trayTemplate${suffix}.png`, scale, glyph([0, 0, 0])); // macOS template image
}
const rounded = (radius) => (x, y) => {
  const m = 0.06;
  const cx = Math.min(Math.max(x, m + radius), 1 - m - radius);
  const cy = Math.min(Math.max(y, m + radius), 1 - m - radius);
  return dist(x, y, cx, cy) <= radius;
};
const appIcon = [
  { color: BLUE, inside: rounded(0.2) },
  ...glyph([255, 255, 255]).map((l) => ({ ...l, inside: (x, y) => l.inside(0.5 + (x - 0.5) / 0.72, 0.5 + (y - 0.5) / 0.72) })),
];
write('icon.png', 512, appIcon);
write('icon-256.png', 256, appIcon);
console.log(`icons written to ${out}`);
