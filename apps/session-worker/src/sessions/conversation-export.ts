import type { ChatMessageDto, SessionExport } from '@skald/contracts';

/** A file name for a download: the title's letters and digits, ASCII only, never empty. */
export function exportFilename(title: string | null, createdAt: string, ext: 'md' | 'json'): string {
  const slug = (title ?? '')
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48)
    .replace(/-+$/g, '');
  return `skald-${slug || 'conversation'}-${createdAt.slice(0, 10)}.${ext}`;
}

/** A fence longer than any run of backticks in `text`, so no content can close it. */
function fenceFor(text: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  return '`'.repeat(longest + 1);
}

function toolLines(m: ChatMessageDto): string[] {
  return (m.tool_calls ?? []).map((c) => {
    const args = typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments);
    const shown = args.length > 200 ? `${args.slice(0, 200)}…` : args;
    return `- tool \`${c.name.replace(/`/g, "'")}\` (${c.status}): ${shown.replace(/\s+/g, ' ')}`;
  });
}

/**
 * The conversation as Markdown: a heading per message ("You" / "Assistant"), the text as written
 * (it is Markdown already), tool calls as a list under the answer that made them. User text is
 * put in a fence so that nothing a user typed becomes a heading of the document.
 */
export function toMarkdown(doc: SessionExport): string {
  const out = [`# ${(doc.session.title ?? 'Conversation').replace(/\s+/g, ' ')}`, ''];
  out.push(`Source: ${doc.session.source} · agent: ${doc.session.agent_id} · started ${doc.session.created_at}`, '');
  for (const m of doc.messages) {
    if (m.role === 'user') {
      const fence = fenceFor(m.content);
      out.push(`## You (${m.created_at})`, '', `${fence}text`, m.content, fence, '');
      for (const a of m.attachments ?? []) out.push(`- attachment: ${a.name} (${a.path})`);
    } else {
      out.push(`## Assistant (${m.created_at})`, '');
      if (m.content.trim()) out.push(m.content, '');
      const tools = toolLines(m);
      if (tools.length > 0) out.push(...tools, '');
    }
  }
  return `${out.join('\n').trimEnd()}\n`;
}
