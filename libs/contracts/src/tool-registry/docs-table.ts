/** docs/architecture.md's table of built-in tools and list of tool groups, rendered from the registry (test/docs checks the page). */
import { BUILTIN_TOOLS, LOOP_TOOLS, SYNTHETIC_TOOLS } from './registry';
import { REGISTRY_GROUPS, TOOL_GROUP_DESCRIPTIONS, TOOL_GROUPS } from './tool-patterns';

const offered = (o: { root: boolean; subAgents: boolean }): string =>
  o.root && o.subAgents ? 'everywhere' : o.root ? 'root only' : o.subAgents ? 'sub-agents only' : 'nowhere';

export function builtinToolsMarkdown(): string {
  const rows = BUILTIN_TOOLS.map((t) => {
    const required = ((t.parameters.required ?? []) as string[]).map((a) => `\`${a}\``).join(', ') || '—';
    return `| \`${t.name}\` | ${t.category} | ${t.access} | ${required} | ${t.restartHint} | ${offered(t.offeredAt)} | ${t.defaultRule} |`;
  });
  const loop = LOOP_TOOLS.map((t) => `\`${t.name}\` (${t.category}, ${t.access}, ${t.defaultRule})`).join(', ');
  const known = [...BUILTIN_TOOLS, ...LOOP_TOOLS, ...SYNTHETIC_TOOLS].map((t) => t.name);
  const groups = TOOL_GROUPS.map((g) => {
    const members = known.filter(REGISTRY_GROUPS[g]);
    const listed = members.length > 0 ? `: ${members.map((n) => `\`${n}\``).join(', ')}` : '';
    return `- \`${g}\`: ${TOOL_GROUP_DESCRIPTIONS[g]}${listed}`;
  });
  return [
    '| tool | category | access | required arguments | restart hint | offered | default rule |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
    `The loop's own tools (category, access, default rule): ${loop}.`,
    '',
    "Tool groups (approval rules and agents' `tools` filters):",
    '',
    ...groups,
  ].join('\n');
}
