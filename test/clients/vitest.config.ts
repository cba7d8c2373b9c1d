// The opt-in real-client suite (`npm run test:clients`, run by .ci/run): pinned real CLIs and SDKs
// installed into .cache/clients/, driven against the gateway and the templates.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/clients/**/*.clients.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 180_000,
    hookTimeout: 600_000, // first run: npm installs
    pool: 'forks',
    maxWorkers: 1,
    reporters: ['default'],
  },
});
