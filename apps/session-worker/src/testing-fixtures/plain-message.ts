import { randomUUID } from 'node:crypto';
import type { NewMessage } from '@skald/agent-loop';

/** A plain chat row of a frame (no reasoning, attachments, client id or token counts), new id, now (or `createdAt`). */
export function plainMessage(
  sessionId: string,
  frameId: string,
  role: NewMessage['role'],
  content: string,
  createdAt = new Date().toISOString(),
): NewMessage {
  return {
    id: randomUUID(),
    sessionId,
    frameId,
    role,
    content,
    reasoningContent: null,
    isSynthetic: false,
    attachments: null,
    clientMessageId: null,
    inputTokens: null,
    outputTokens: null,
    createdAt,
  };
}
