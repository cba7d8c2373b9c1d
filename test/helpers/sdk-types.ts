/**
 * Wire values checked against an official SDK's TypeScript types: each value becomes an object
 * literal typed as the named SDK type in a generated file, and the TypeScript compiler reports what
 * does not fit — a missing required field, a wrong type or literal, a field the type does not have
 * (the excess-property check; TypeScript then skips that literal's other checks, so a field a newer
 * SDK has and the installed one lacks must be taken out first: `withoutFields`). No network: the
 * types come from an installed package.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';

export interface TypedValue {
  /** A type reachable from `imports`, e.g. `Responses.Response`. */
  type: string;
  value: unknown;
  /** Where the value came from, in the error messages. */
  label: string;
}

/**
 * The compiler's complaints about `values`, one line each ([] when every value fits).
 * `imports` maps a namespace name to a type declaration file (`Responses` → `…/responses.d.ts`).
 */
export function typeErrors(imports: Record<string, string>, values: TypedValue[]): string[] {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bc-sdk-types-'));
  try {
    const file = path.join(dir, 'wire.ts');
    const lines = Object.entries(imports).map(([name, from]) => `import type * as ${name} from ${JSON.stringify(from)};`);
    values.forEach((v, i) => lines.push(`// ${v.label}`, `export const v${i}: ${v.type} = ${JSON.stringify(v.value, null, 1)};`));
    fs.writeFileSync(file, `${lines.join('\n')}\n`);
    const program = ts.createProgram([file], {
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      noErrorTruncation: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      types: [],
    });
    const source = program.getSourceFile(file)!;
    const text = source.getFullText();
    return ts.getPreEmitDiagnostics(program, source).map((d) => {
      const at = d.start === undefined ? undefined : source.getLineAndCharacterOfPosition(d.start).line;
      const label = at === undefined ? '' : labelAbove(text, at);
      return `${label}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The `// label` comment above a line of the generated file. */
function labelAbove(text: string, line: number): string {
  const lines = text.split('\n');
  for (let i = line; i >= 0; i--) if (lines[i]?.startsWith('// ')) return lines[i]!.slice(3);
  return `line ${line + 1}`;
}

/** `value` without the fields `fields` names (parent key → its field names), at any depth. */
export function withoutFields(value: unknown, fields: Record<string, string[]>): unknown {
  if (Array.isArray(value)) return value.map((v) => withoutFields(v, fields));
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => {
      const drop = fields[key];
      const inner =
        drop && typeof v === 'object' && v !== null ? Object.fromEntries(Object.entries(v).filter(([k]) => !drop.includes(k))) : v;
      return [key, withoutFields(inner, fields)];
    }),
  );
}
