/** docs/architecture.md's table of built-in tools, rendered from the registry (test/docs checks the page). */
import { BUILTIN_TOOLS, LOOP_TOOLS } from './registry';

const offered = (o: { root: boolean; subAgents: boolean }): string =>
  o.root && o.subAgents ? 'everywhere' : o.root ? 'root only' : o.subAgents ? 'sub-agents only' : 'nowhere';

export function builtinToolsMarkdown(): string {
  const rows = BUILTIN_TOOLS.map((t) => {
    const required = ((t.parameters.required ?? []) as string[]).map((a) => `\`${a}\``).join(', ') || '—';
    return `| \`${t.name}\` | ${t.category} | ${t.access} | ${required} | ${t.restartHint} | ${offered(t.offeredAt)} | ${t.defaultRule} |`;
  });
  const loop = LOOP_TOOLS.map((t) => `\`${t.name}\` (${t.category}, ${t.defaultRule})`).join(', ');
  return [
    '| tool | category | access | required arguments | restart hint | offered | default rule |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
    `The loop's own tools (category, default rule): ${loop}.`,
  ].join('\n');
}
