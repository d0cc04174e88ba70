import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/** A fenced example of a docs page: `sh`/`bash` runs in bash, `js` as an ES module in Node. */
export interface DocExample {
  title: string;
  lang: string;
  code: string;
  /** The ```text block the page shows after "Output:", where it has one. */
  output: string;
}

/** Each `### Title` section's ```lang block followed by "Output:" and the ```text block it prints. */
export function examplesWithOutput(file: string, lang: string): DocExample[] {
  const md = readFileSync(file, 'utf8');
  const re = new RegExp(
    `^### (.+)\\n[\\s\\S]*?\`\`\`${lang}\\n([\\s\\S]*?)\`\`\`\\n\\nOutput:\\n\\n\`\`\`text\\n([\\s\\S]*?)\`\`\``,
    'gm',
  );
  return [...md.matchAll(re)].map((m) => ({ title: m[1], lang, code: m[2], output: m[3] }));
}

/** Every fenced block of the page, in order (titles are their positions). */
export function fencedExamples(file: string): DocExample[] {
  const md = readFileSync(file, 'utf8');
  return [...md.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)].map((m, i) => ({
    title: `example ${i}`,
    lang: m[1],
    code: m[2],
    output: '',
  }));
}

/**
 * Writes the example into `dir` and runs it as a reader would; resolves with what it printed.
 * `errexit` runs a shell example with `bash -e`, for pages whose examples show no failing command.
 */
export async function runExample(
  example: Pick<DocExample, 'lang' | 'code'>,
  o: { dir: string; cwd?: string; env: NodeJS.ProcessEnv; timeoutMs?: number; errexit?: boolean },
): Promise<string> {
  const js = example.lang === 'js';
  const file = path.join(o.dir, `${randomUUID()}.${js ? 'mjs' : 'sh'}`);
  writeFileSync(file, example.code);
  const { stdout } = await exec(js ? process.execPath : 'bash', js ? [file] : o.errexit ? ['-e', file] : [file], {
    cwd: o.cwd ?? o.dir,
    env: o.env,
    timeout: o.timeoutMs ?? 60_000,
  });
  return stdout;
}
