#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ by `npm install` (the `prepare` script).
import('../dist/cli/main.js')
  .then((cli) => cli.main(process.argv.slice(2)))
  .then((code) => {
    process.exitCode = code;
  })
  .catch((error) => {
    if (error && error.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('dist/cli')) {
      console.error('backchannel: not built yet. Run `npm install` (or `npm run build`) in the package first.');
    } else {
      console.error(error && error.stack ? error.stack : error);
    }
    process.exitCode = 1;
  });
