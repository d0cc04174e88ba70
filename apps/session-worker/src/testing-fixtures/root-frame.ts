import type { Mutation } from '@skald/agent-loop';

/** The mutation that opens a session's root frame (agent `main`, depth 0), as a turn's first commit does. */
export function openRootFrame(sessionId: string, frameId: string): Mutation {
  return {
    kind: 'openFrame',
    frame: {
      id: frameId,
      sessionId,
      parentFrameId: null,
      parentToolCallId: null,
      agentId: 'main',
      depth: 0,
      status: 'active',
      clientPin: null,
    },
  };
}
