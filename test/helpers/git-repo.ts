/** Real git repositories for the worktree tests (removed after the test); the git helpers are ./git.ts. */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from './core.js';
import { gitIn, lines, writeFiles } from './git.js';

export { checkoutHash, gitIn, lines, linkedWorktrees, ourBranches, writeFiles } from './git.js';

/** A repository with `files` committed on `main`; removed after the test. */
export function makeRepo(files: Record<string, string> = { 'README.md': '# demo\n', 'src/app.ts': lines(20) }): string {
  const repo = path.join(tempDir('bc-repo-'), 'repo');
  mkdirSync(repo);
  gitIn(repo, 'init', '-q', '-b', 'main');
  writeFiles(repo, files);
  gitIn(repo, 'add', '-A');
  gitIn(repo, 'commit', '-q', '-m', 'initial');
  return repo;
}
