import type { HumanAnswer, HumanRequest, HumanWaitPort } from '@skald/agent-loop';
import { type Role, HumanRequestState, topicOf } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { APPROVAL_CALL_TIMEOUT_MS } from './nats-gate';

/** Maps a stored request state to the loop's answer; null while it is still pending. */
export function answerOf(state: HumanRequestState): HumanAnswer | null {
  switch (state.status) {
    case 'pending':
      return null;
    case 'approved':
      return state.edit ? { kind: 'approved', edit: state.edit } : { kind: 'approved' };
    case 'rejected':
      return { kind: 'rejected', note: state.note };
    case 'answered':
      return { kind: 'answered', answer: state.answer ?? '' };
    case 'cancelled':
      return { kind: 'cancelled' };
    default: {
      const never: never = state.status;
      throw new Error(`unknown request status ${String(never)}`);
    }
  }
}

export interface HumanWaitOptions {
  /** After this long without an answer the turn parks (lease released, nothing held in memory). */
  parkAfterMs: number;
  /** Safety net for a lost doorbell: the request is re-read this often. */
  pollMs: number;
  /** True while the worker drains for shutdown: a waiting turn parks at once. */
  draining: () => boolean;
  /** The turn that asks (logged by the approval service). */
  turnId?: string;
  /** The job run whose session asks: the approval service notifies `job_needs_human` for it. */
  jobRunId?: string | null;
  /** The security groups of the session owner's groups: an edit of a call is judged again with them. */
  securityGroups?: readonly string[];
}

/**
 * The loop's human wait on the approval service: the request is registered durably (idempotent by
 * request id, so a recovery re-asks the same card), then answered by `approval.resolved.<session>`,
 * by polling, by the turn's signal (/stop → cancelled) — or the turn parks after `parkAfterMs`.
 */
export class NatsHumanWait implements HumanWaitPort {
  constructor(
    private readonly bus: Bus,
    private readonly role: Role,
    private readonly options: HumanWaitOptions,
  ) {}

  /** Registers the request before its card is committed (idempotent by request id). */
  async prepare(request: HumanRequest): Promise<void> {
    await this.register(request);
  }

  private register(request: HumanRequest): Promise<HumanRequestState> {
    const actor = { userId: request.userId, role: this.role };
    return this.bus.call(
      'approval.register',
      {
        actor,
        request_id: request.requestId,
        kind: request.kind === 'approval' ? 'approval' : 'clarification',
        tool_call_id: request.toolCallId,
        session_id: request.sessionId,
        turn_id: this.options.turnId,
        ...(this.options.jobRunId ? { job_run_id: this.options.jobRunId } : {}),
        source: request.source,
        tool_name: request.kind === 'approval' ? request.toolName : 'ask_user_clarification',
        arguments:
          request.kind === 'approval' ? request.arguments : { title: request.title, question: request.question },
        ...(request.kind === 'approval' && request.preview
          ? {
              preview: {
                path: request.preview.path,
                old_content: request.preview.oldContent,
                new_content: request.preview.newContent,
                ...(request.preview.baseHash ? { base_hash: request.preview.baseHash } : {}),
              },
            }
          : {}),
        ...(request.kind === 'approval' && request.landsAt !== undefined ? { lands_at: request.landsAt } : {}),
        ...(request.kind === 'approval' && request.gate
          ? {
              gate_context: {
                agent_id: request.gate.agentId,
                ...(request.gate.securityGroup ? { security_group: request.gate.securityGroup } : {}),
                ...(this.options.securityGroups?.length ? { security_groups: [...this.options.securityGroups] } : {}),
                run_context: {
                  working_directory: request.gate.runContext.workingDirectory,
                  allow_fs_reads: request.gate.runContext.allowFsReads ?? [],
                  allow_fs_writes: request.gate.runContext.allowFsWrites ?? [],
                },
              },
            }
          : {}),
        ...(request.kind === 'question'
          ? {
              question: {
                title: request.title,
                question: request.question,
                suggested_answers: request.suggestedAnswers,
              },
            }
          : {}),
      },
      { timeoutMs: APPROVAL_CALL_TIMEOUT_MS },
    );
  }

  async awaitHuman(request: HumanRequest, signal: AbortSignal): Promise<HumanAnswer> {
    const actor = { userId: request.userId, role: this.role };
    const state = await this.register(request);
    const immediate = answerOf(state);
    if (immediate) return immediate;
    if (signal.aborted) return { kind: 'cancelled' };
    if (this.options.draining()) return { kind: 'park' };

    return new Promise<HumanAnswer>((resolve) => {
      let settled = false;
      const finish = (answer: HumanAnswer): void => {
        if (settled) return;
        settled = true;
        sub.unsubscribe();
        clearTimeout(parkTimer);
        clearInterval(poll);
        signal.removeEventListener('abort', onAbort);
        resolve(answer);
      };
      const onAbort = (): void => finish({ kind: 'cancelled' });
      signal.addEventListener('abort', onAbort, { once: true });
      const sub = this.bus.subscribe(topicOf('approvalResolved', request.sessionId), (s) => {
        if (s.request_id !== request.requestId) return;
        const a = answerOf(s);
        if (a) finish(a);
      });
      const parkTimer = setTimeout(() => finish({ kind: 'park' }), this.options.parkAfterMs);
      const poll = setInterval(() => {
        if (this.options.draining()) return finish({ kind: 'park' });
        this.bus.call('approval.get', { actor, request_id: request.requestId }).then(
          (s) => {
            const a = answerOf(s);
            if (a) finish(a);
          },
          () => undefined,
        );
      }, this.options.pollMs);
    });
  }
}
