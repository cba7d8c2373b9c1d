/**
 * `fs/read_text_file` and `fs/write_text_file` as Backchannel serves them to an ACP agent: confined to
 * the task's directory (a path with `..`, an absolute path outside it, or a symlink leading out is
 * refused), sizes bounded both ways, and a write no approval covers passes the `edit` policy first.
 * Each refusal is a JSON-RPC error to the agent and a line in the work's `refusals`.
 */
import { constants, promises as fs } from 'node:fs';
import path from 'node:path';
import { RequestError, type ReadTextFileRequest, type ReadTextFileResponse, type WriteTextFileRequest } from '@agentclientprotocol/sdk';
import type { Approvals } from './approvals.js';
import type { Work } from './work.js';

/** The most a read returns and a write takes: 10 MiB, as the bound on an agent's message. */
export const MAX_FILE_BYTES = 10 * 1024 * 1024;

export class FsService {
  private root: string | undefined;

  constructor(
    private readonly cwd: string,
    private readonly approvals: Approvals,
    private readonly work: Work,
  ) {}

  async read(params: ReadTextFileRequest): Promise<ReadTextFileResponse> {
    const file = await this.confine(params.path, 'read');
    const stat = await fs.stat(file).catch(() => this.refuse(`read ${params.path}: no such file`));
    if (!stat.isFile()) this.refuse(`read ${params.path}: not a file`);
    if (stat.size > MAX_FILE_BYTES) this.refuse(`read ${params.path}: ${stat.size} bytes is over the ${MAX_FILE_BYTES}-byte limit`);
    const content = await fs.readFile(file, 'utf8');
    if (params.line == null && params.limit == null) return { content };
    const lines = content.split('\n');
    const start = Math.max(0, (params.line ?? 1) - 1);
    return { content: lines.slice(start, params.limit == null ? undefined : start + params.limit).join('\n') };
  }

  async write(params: WriteTextFileRequest, signal: AbortSignal): Promise<Record<string, never>> {
    const bytes = Buffer.byteLength(params.content, 'utf8');
    if (bytes > MAX_FILE_BYTES) this.refuse(`write ${params.path}: ${bytes} bytes is over the ${MAX_FILE_BYTES}-byte limit`);
    const file = await this.confine(params.path, 'write');
    if (!(await this.approvals.mayWrite(file, signal))) this.refuse(`write ${params.path}: not approved`);
    await fs.mkdir(path.dirname(file), { recursive: true });
    // O_NOFOLLOW: a symlink put in place after the check is not followed out of the directory.
    const handle = await fs.open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o644);
    try {
      await handle.writeFile(params.content, 'utf8');
    } finally {
      await handle.close();
    }
    this.work.filesWritten.add(path.relative(await this.rootDir(), file));
    return {};
  }

  private async rootDir(): Promise<string> {
    return (this.root ??= await fs.realpath(this.cwd));
  }

  /** The real absolute path of `requested` inside the task's directory, or a refusal. */
  private async confine(requested: string, verb: 'read' | 'write'): Promise<string> {
    if (typeof requested !== 'string' || requested === '' || requested.includes('\0')) this.refuse(`${verb}: no path`);
    if (requested.split(/[\\/]/).includes('..')) this.refuse(`${verb} ${requested}: ".." is not allowed`);
    const root = await this.rootDir();
    const absolute = path.resolve(root, requested);
    const inside = (p: string) => p === root || p.startsWith(root + path.sep);
    // The task's directory may itself be reached through a symlink (e.g. /tmp): compare real paths.
    const real = await realOfNearest(absolute);
    if (!inside(absolute) && !inside(real.path)) this.refuse(`${verb} ${requested}: outside the task's directory`);
    if (!inside(real.path)) this.refuse(`${verb} ${requested}: a symlink leads outside the task's directory`);
    return path.join(real.path, ...real.rest);
  }

  private refuse(message: string): never {
    this.work.refuse(message);
    throw RequestError.invalidParams(undefined, `refused: ${message}`);
  }
}

/** The real path of `absolute`'s nearest existing ancestor (itself if it exists), and the parts below it. */
async function realOfNearest(absolute: string): Promise<{ path: string; rest: string[] }> {
  const rest: string[] = [];
  let current = absolute;
  for (;;) {
    try {
      return { path: await fs.realpath(current), rest };
    } catch {
      const parent = path.dirname(current);
      if (parent === current) return { path: current, rest };
      rest.unshift(path.basename(current));
      current = parent;
    }
  }
}
