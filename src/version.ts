import { readFileSync } from 'node:fs';

/** The package version, read from package.json next to dist/ (works from a checkout and when installed). */
export function readOwnVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}
