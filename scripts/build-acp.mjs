#!/usr/bin/env node
// Bundles the ACP adapter (src/acp, docs/acp.md) over tsc's output of it, so that an ACP task's
// start loads two files instead of ~150 (zod and the ACP SDK are most of them):
//   dist/acp/main.js     the first step: starts the agent, then imports ./adapter.js (kept external);
//   dist/acp/adapter.js  everything else, zod and the ACP SDK included, in one file.
// The relay (dist/relay/, bridge mode only) stays tsc's own: it finds its server program beside its
// module. Whitespace and syntax are minified, names kept (as scripts/build-sdk.mjs does), source maps
// linked. Run after `tsc -p tsconfig.json`, which emits every module (tsc alone leaves a working, unbundled
// adapter; this step only makes it start sooner: docs/performance.md, issue 44).
// `--outdir <dir>` writes the two files there instead of dist/acp (test/acp/bundle.test.ts).
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';
import { NODE_BUNDLE } from './bundle-options.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const at = process.argv.indexOf('--outdir');
const outdir = at === -1 ? `${root}dist/acp` : process.argv[at + 1];
if (!outdir) throw new Error('--outdir needs a directory');

/** Imports left to Node at run time, by the specifier src/acp writes them with. */
const keepExternal = {
  name: 'acp-externals',
  setup(b) {
    b.onResolve({ filter: /^\.\/adapter\.js$|^\.\.\/relay\/index\.js$/ }, (args) =>
      args.importer.startsWith(`${root}src/acp/`) ? { path: args.path, external: true } : undefined,
    );
  },
};

const common = { ...NODE_BUNDLE, plugins: [keepExternal] };

await Promise.all([
  build({ ...common, entryPoints: [`${root}src/acp/main.ts`], outfile: `${outdir}/main.js` }),
  build({ ...common, entryPoints: [`${root}src/acp/adapter.ts`], outfile: `${outdir}/adapter.js` }),
]);
console.log(`built ${outdir}/main.js and ${outdir}/adapter.js`);
