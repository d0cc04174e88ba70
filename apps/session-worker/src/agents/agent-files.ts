import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { AgentMeta, describeZodError } from '@skald/contracts';
import { resolveDirectives } from './agent-prompt';

/** A built-in agent as it is in the repository. */
export interface BuiltinAgent {
  id: string;
  meta: AgentMeta;
  /** AGENT.md, directives unresolved. */
  prompt: string;
}

export interface AgentFiles {
  dir: string;
  /** By id, in directory order. */
  agents: Map<string, BuiltinAgent>;
  /** `_shared/<name>.md` by name. */
  fragments: Map<string, string>;
}

export class AgentFilesError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AgentFilesError';
  }
}

const ID = /^[a-z0-9][a-z0-9_-]{0,47}$/;

/**
 * Reads `agents/<id>/AGENT.md` + `meta.json` and the shared fragments `agents/_shared/*.md`. A
 * broken file stops the worker at start with a message naming the file and the field: an agent
 * that silently vanished would be worse.
 */
export function loadAgentFiles(dir: string): AgentFiles {
  if (!existsSync(dir)) throw new AgentFilesError(`agents directory not found: ${dir} (set SKALD_AGENTS_DIR)`);
  const fragments = new Map<string, string>();
  const shared = path.join(dir, '_shared');
  if (existsSync(shared)) {
    for (const f of readdirSync(shared).sort()) {
      if (f.endsWith('.md')) fragments.set(f.slice(0, -3), readFileSync(path.join(shared, f), 'utf8'));
    }
  }
  const agents = new Map<string, BuiltinAgent>();
  for (const id of readdirSync(dir).sort()) {
    const home = path.join(dir, id);
    if (id.startsWith('_') || id.startsWith('.') || !statSync(home).isDirectory()) continue;
    if (!ID.test(id)) throw new AgentFilesError(`${home}: an agent directory name must match ${ID.source}`);
    const metaFile = path.join(home, 'meta.json');
    const promptFile = path.join(home, 'AGENT.md');
    for (const f of [metaFile, promptFile]) if (!existsSync(f)) throw new AgentFilesError(`${f} is missing`);
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(metaFile, 'utf8'));
    } catch (e) {
      throw new AgentFilesError(`${metaFile}: not valid JSON (${e instanceof Error ? e.message : String(e)})`);
    }
    const parsed = AgentMeta.safeParse(raw);
    if (!parsed.success) throw new AgentFilesError(`${metaFile}: ${describeZodError(parsed.error).message}`);
    const prompt = readFileSync(promptFile, 'utf8');
    try {
      resolveDirectives(prompt, fragments);
    } catch (e) {
      throw new AgentFilesError(`${promptFile}: ${e instanceof Error ? e.message : String(e)}`);
    }
    agents.set(id, { id, meta: parsed.data, prompt });
  }
  if (!agents.has('main')) throw new AgentFilesError(`${dir} has no "main" agent (agents/main/AGENT.md + meta.json)`);
  return { dir, agents, fragments };
}

/** `SKALD_AGENTS_DIR`, else `agents/` in the working directory, else next to the repository root of this file. */
export function defaultAgentsDir(configured: string | undefined): string {
  if (configured) return path.resolve(configured);
  const fromCwd = path.resolve('agents');
  if (existsSync(path.join(fromCwd, 'main', 'meta.json'))) return fromCwd;
  for (let d = __dirname; d !== path.dirname(d); d = path.dirname(d)) {
    const candidate = path.join(d, 'agents');
    if (existsSync(path.join(candidate, 'main', 'meta.json'))) return candidate;
  }
  return fromCwd;
}
