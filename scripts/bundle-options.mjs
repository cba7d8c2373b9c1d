// The esbuild options every Node bundle of the build shares (scripts/build-sdk.mjs, scripts/build-acp.mjs):
// one ESM file for Node 20, whitespace and syntax minified but names kept, so stack traces read as the
// source does (the linked source map maps them back to it).
export const NODE_BUNDLE = {
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: ['node20'],
  sourcemap: 'linked',
  legalComments: 'none',
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
};
