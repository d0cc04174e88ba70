// The items of a conversation's view: what the chat reducer (chat-state.ts) and the history loader
// (history/history-items.ts) both build.
import type { HumanDecision } from '@skald/contracts';
import type { Attachment } from './files/attachment-frames';

export type ToolStatus = 'running' | 'awaiting' | 'done' | 'error' | 'cancelled' | 'rejected';

export type Item =
  | { kind: 'user'; key: string; content: string; attachments?: Attachment[] }
  /** A workspace file the agent changed or opened: a chip that opens the viewer. */
  | { kind: 'file'; key: string; path: string; how: 'changed' | 'opened' }
  | { kind: 'assistant'; key: string; content: string; reasoning: string; streaming: boolean; depth: number }
  | {
      kind: 'tool';
      key: string;
      name: string;
      label: string;
      args: unknown;
      status: ToolStatus;
      output: string;
      result: string;
      depth: number;
    }
  | {
      kind: 'approval';
      key: string;
      requestId: string;
      toolCallId: string;
      toolName: string;
      path?: string;
      oldContent?: string;
      newContent?: string;
      args?: unknown;
      /** Where the call lands when that is not the path it names (`lands_at`). */
      landsAt?: string;
      resolved?: 'approved' | 'rejected' | 'cancelled';
      /** Who answered, when, where, and the session approval it opened. */
      decision?: HumanDecision;
    }
  | {
      kind: 'question';
      key: string;
      requestId: string;
      title: string;
      question: string;
      suggested: string[];
      answered?: boolean;
    }
  | { kind: 'agent'; key: string; agentId: string; depth: number; prompt: string; result?: string }
  | { kind: 'notice'; key: string; text: string; level: 'info' | 'error' };
