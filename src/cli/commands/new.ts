/**
 * `backchannel new <dir> --template <name>`: scaffolds a runnable sub-agent from templates/<name>
 * (its files, README, test and vendored shared modules: src/templates/scaffold.ts), adds a
 * package.json wired to this Backchannel installation, and prints the next steps.
 */
import { existsSync, lstatSync, mkdirSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { findTemplate, listTemplates, packageRoot, TemplateError, templatesRoot, type Template } from '../../templates/catalog.js';
import { scaffoldTemplate } from '../../templates/scaffold.js';
import { EXIT, parseCommandLine, usageError, type CliCommand } from '../command.js';
import { readOwnVersion } from '../../version.js';

const HELP = `Usage: backchannel new <dir> --template <name>
       backchannel new --list

Creates <dir> with a runnable sub-agent copied from a template: the agent, its README, a test that
runs it under the broker (npm test), and a package.json that points at this Backchannel.

Options:
  -t, --template <name>  the template to copy (see --list)
  -l, --list             list the templates and exit
      --no-link          do not link node_modules/backchannel-agents to this installation (run npm install yourself)
  -h, --help             show this help

Refuses to write into a directory that exists and is not empty, or that is not yours alone
(another user's, a symlink, or writable by group or others).

Examples:
  backchannel new my-agent --template python
  backchannel new reviewer --template llm-agent`;

function formatList(templates: Template[]): string {
  const width = Math.max(...templates.map((t) => t.name.length));
  const lines = templates.map((t) => {
    const needs = t.requires?.length ? `\n  ${' '.repeat(width)}  needs: ${t.requires.join(', ')}` : '';
    return `  ${t.name.padEnd(width)}  ${t.description}${needs}`;
  });
  return ['Templates:', ...lines].join('\n');
}

function quoteArg(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** The template's sample input, written next to its code so `npm start` has something to do. */
const SAMPLE_INPUT = 'sample-input.json';

function packageJson(name: string, template: Template, link: boolean): string {
  const sample = template.input !== undefined ? ['--input', `@${SAMPLE_INPUT}`] : [];
  const runLine = ['backchannel', 'run', ...sample, '--', ...template.run].map(quoteArg).join(' ');
  const input = template.input === undefined ? [] : ['--input', JSON.stringify(template.input)];
  const checkLine = ['backchannel', 'check', ...input, '--', ...template.run].map(quoteArg).join(' ');
  // `npm test` runs the conformance check first, unless the agent needs an account or a service
  // (a requirement that is more than a program name): then `npm run check` is there for when it has one.
  const offline = (template.requires ?? []).every((need) => /^[\w.-]+$/.test(need));
  const pkg = {
    name:
      name
        .toLowerCase()
        .replace(/[^a-z0-9._-]+/g, '-')
        .replace(/^[._-]+/, '') || 'sub-agent',
    version: '0.1.0',
    private: true,
    type: 'module',
    description: template.description,
    scripts: {
      start: runLine,
      check: checkLine,
      test: offline ? 'npm run check && node --test test/' : 'node --test test/',
    },
    // A file: dependency on the installation that scaffolded this project: works offline, and
    // `npm install` recreates the same link.
    dependencies: { 'backchannel-agents': link ? `file:${packageRoot()}` : `^${readOwnVersion()}` },
  };
  return JSON.stringify(pkg, null, 2) + '\n';
}

/** Why an existing directory is not safe to scaffold into (a symlink, someone else's, writable by others), or undefined. */
function untrustedDir(dir: string): string | undefined {
  if (process.platform === 'win32') return undefined;
  const stat = lstatSync(dir);
  if (stat.isSymbolicLink()) return 'is a symlink';
  if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) return `belongs to uid ${stat.uid}, not to you`;
  if ((stat.mode & 0o022) !== 0)
    return `is writable by ${stat.mode & 0o002 ? 'everyone' : 'its group'} (mode ${(stat.mode & 0o777).toString(8)})`;
  return undefined;
}

function isEmptyDir(dir: string): boolean {
  return readdirSync(dir).length === 0;
}

function scaffold(target: string, template: Template, link: boolean): void {
  scaffoldTemplate(template, target);
  writeFileSync(path.join(target, 'package.json'), packageJson(path.basename(target), template, link));
  if (template.input !== undefined) writeFileSync(path.join(target, SAMPLE_INPUT), JSON.stringify(template.input, null, 2) + '\n');
  if (!existsSync(path.join(target, '.gitignore'))) writeFileSync(path.join(target, '.gitignore'), 'node_modules/\n__pycache__/\n');
  if (link) {
    mkdirSync(path.join(target, 'node_modules'), { recursive: true });
    // 'junction' makes this work without admin rights on Windows; ignored elsewhere.
    symlinkSync(packageRoot(), path.join(target, 'node_modules', 'backchannel-agents'), 'junction');
    // What `npm install` would add, so `npx backchannel` and `npm start` work straight away.
    if (process.platform !== 'win32') {
      mkdirSync(path.join(target, 'node_modules', '.bin'), { recursive: true });
      symlinkSync('../backchannel-agents/bin/backchannel.js', path.join(target, 'node_modules', '.bin', 'backchannel'));
    }
  }
}

function nextSteps(dirArg: string, template: Template, link: boolean): string {
  const input = template.input !== undefined ? ` --input ${quoteArg(JSON.stringify(template.input))}` : '';
  const run = template.run.map(quoteArg).join(' ');
  return [
    `Created ${dirArg} from the ${template.name} template.`,
    '',
    'Next steps:',
    `  cd ${quoteArg(dirArg)}`,
    ...(link ? [] : ['  npm install']),
    '  # run it once: progress on the terminal, the result on stdout',
    `  npx backchannel run${input} -- ${run}`,
    '  # its test: runs it under the broker',
    '  npm test',
    '  # the panel: watch tasks, answer their questions',
    '  npx backchannel serve',
    ...(template.requires?.length ? ['', `Needs: ${template.requires.join(', ')}.`] : []),
    '',
    'README.md in the new directory explains the template; docs/writing-sub-agents.md the rest.',
  ].join('\n');
}

export const command: CliCommand = {
  async run(argv) {
    const parsed = parseCommandLine(
      'new',
      argv,
      {
        template: { type: 'string', short: 't' },
        list: { type: 'boolean', short: 'l' },
        'no-link': { type: 'boolean' },
      },
      HELP,
      true,
    );
    if (typeof parsed === 'number') return parsed;
    const { values, positionals } = parsed;

    let templates: Template[];
    try {
      templates = listTemplates();
    } catch (error) {
      process.stderr.write(`backchannel new: ${(error as Error).message}\n`);
      return EXIT.failed;
    }
    if (values.list) {
      process.stdout.write((templates.length ? formatList(templates) : `No templates found in ${templatesRoot()}`) + '\n');
      return EXIT.ok;
    }

    const [dirArg, ...extra] = positionals;
    if (dirArg === undefined) return usageError('backchannel new: missing <dir>', HELP);
    if (extra.length > 0) return usageError(`backchannel new: unexpected argument "${extra[0]}"`, HELP);
    if (values.template === undefined) {
      return usageError(`backchannel new: missing --template <name>\n\n${formatList(templates)}`, HELP);
    }
    let template: Template | undefined;
    try {
      template = findTemplate(values.template);
    } catch (error) {
      if (!(error instanceof TemplateError)) throw error;
      process.stderr.write(`backchannel new: ${error.message}\n`);
      return EXIT.failed;
    }
    if (!template) {
      return usageError(`backchannel new: unknown template "${values.template}"\n\n${formatList(templates)}`, HELP);
    }

    const target = path.resolve(dirArg);
    if (existsSync(target)) {
      if (!statSync(target).isDirectory()) {
        process.stderr.write(`backchannel new: ${dirArg} exists and is not a directory\n`);
        return EXIT.failed;
      }
      const untrusted = untrustedDir(target);
      if (untrusted) {
        process.stderr.write(
          `backchannel new: ${dirArg} ${untrusted}; another user could change the agent before you run it (nothing was written)\n`,
        );
        return EXIT.failed;
      }
      if (!isEmptyDir(target)) {
        process.stderr.write(`backchannel new: ${dirArg} is not empty; choose a new directory (nothing was written)\n`);
        return EXIT.failed;
      }
    }
    const link = values['no-link'] !== true;
    try {
      scaffold(target, template, link);
    } catch (error) {
      process.stderr.write(`backchannel new: could not create ${dirArg}: ${(error as Error).message}\n`);
      return EXIT.failed;
    }
    process.stdout.write(nextSteps(dirArg, template, link) + '\n');
    return EXIT.ok;
  },
};
