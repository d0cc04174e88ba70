import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { capText } from '../command/output-capture';
import { OUTPUT_MAX_BYTES } from '../command/plain-command.runner';

/** What the model reads of an MCP result: its text, with other content named, capped like command output. */
export function resultText(r: CallToolResult): string {
  const parts: string[] = [];
  for (const c of r.content ?? []) {
    switch (c.type) {
      case 'text':
        parts.push(c.text);
        break;
      case 'image':
      case 'audio':
        parts.push(`[${c.type} ${c.mimeType}, ${Math.floor((c.data.length * 3) / 4)} bytes]`);
        break;
      case 'resource':
        parts.push('text' in c.resource ? c.resource.text : `[resource ${c.resource.uri}]`);
        break;
      case 'resource_link':
        parts.push(`[resource link ${c.uri}${c.name ? ` (${c.name})` : ''}]`);
        break;
    }
  }
  if (parts.length === 0 && r.structuredContent) parts.push(JSON.stringify(r.structuredContent));
  const text = parts.join('\n');
  return capText(text, OUTPUT_MAX_BYTES);
}
