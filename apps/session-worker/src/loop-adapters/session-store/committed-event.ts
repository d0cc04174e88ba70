import type { SessionEventDraft } from '@skald/agent-loop';

/** A committed session event, ready to announce. */
export interface CommittedEvent {
  userId: string;
  sessionId: string;
  seq: number;
  event: SessionEventDraft;
}
