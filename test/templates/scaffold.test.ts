/** Scaffolding a template with vendored files: copies, import rewriting, refusals. */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { listTemplates, TemplateError } from '../../src/templates/catalog.js';
import { scaffoldTemplate } from '../../src/templates/scaffold.js';
import { tempDir } from '../helpers/core.js';

let dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  dirs = [];
});

/** A package with templates/demo vendoring one file and one directory from lib/. */
function makePackage(vendor: unknown[]): string {
  const root = tempDir('bc-scaffold-');
  dirs.push(root);
  const write = (file: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  };
  write('lib/one.mjs', 'export const one = 1;\n');
  write('lib/pkg/index.mjs', "export { one } from './more.mjs';\n");
  write('lib/pkg/more.mjs', 'export const one = 1;\n');
  write('templates/demo/template.json', JSON.stringify({ name: 'demo', description: 'd', run: ['node', 'agent.mjs'], vendor }));
  write('templates/demo/agent.mjs', 'import { one } from \'../../lib/one.mjs\';\nimport { one as two } from "../../lib/pkg/index.mjs";\n');
  write('templates/demo/test/agent.test.mjs', "import '../../../lib/one.mjs';\nconst keep = '../../lib/one.mjs.bak';\n");
  write('templates/demo/other.mjs', "const keep = '../../lib/one.mjs.bak';\n");
  return root;
}

describe('scaffolding a template', () => {
  it('copies vendored files and directories and rewrites the imports that reached them, in every folder', () => {
    const root = makePackage([
      { from: 'lib/one.mjs', to: 'one.mjs' },
      { from: 'lib/pkg', to: 'vendor/pkg' },
    ]);
    const [template] = listTemplates(path.join(root, 'templates'));
    const target = path.join(tempDir('bc-scaffolded-'), 'project');
    dirs.push(path.dirname(target));
    scaffoldTemplate(template!, target, root);

    expect(fs.readFileSync(path.join(target, 'agent.mjs'), 'utf8')).toBe(
      'import { one } from \'./one.mjs\';\nimport { one as two } from "./vendor/pkg/index.mjs";\n',
    );
    expect(fs.readFileSync(path.join(target, 'test/agent.test.mjs'), 'utf8')).toBe(
      "import '../one.mjs';\nconst keep = '../../lib/one.mjs.bak';\n",
    );
    expect(fs.readFileSync(path.join(target, 'other.mjs'), 'utf8')).toBe("const keep = '../../lib/one.mjs.bak';\n");
    expect(fs.readFileSync(path.join(target, 'vendor/pkg/more.mjs'), 'utf8')).toBe('export const one = 1;\n');
  });

  it('refuses a vendored path that is missing, before writing anything', () => {
    const root = makePackage([{ from: 'lib/gone.mjs', to: 'gone.mjs' }]);
    const [template] = listTemplates(path.join(root, 'templates'));
    const target = path.join(root, 'project');
    expect(() => scaffoldTemplate(template!, target, root)).toThrow(TemplateError);
    expect(() => scaffoldTemplate(template!, target, root)).toThrow(/vendors "lib\/gone.mjs", which is missing/);
    expect(fs.existsSync(target)).toBe(false);
  });

  it('refuses vendor entries that leave the package or the project', () => {
    for (const entry of [{ from: '../x', to: 'x' }, { from: 'x', to: '/abs' }, { from: 'x' }, 'x']) {
      const root = makePackage([entry]);
      expect(() => listTemplates(path.join(root, 'templates'))).toThrow(/"vendor" must be an array/);
    }
  });
});
