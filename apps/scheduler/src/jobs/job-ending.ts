import { notificationLine } from '@skald/contracts';

/**
 * The one place every ending of a job run is classified (spec 001, "Sub-agents": one JobOutcome
 * classification, one delivery site). Whatever happened — a final answer, a failure, a kill, a
 * session that could not even start — the run ends with exactly one of these, and the delivery
 * (async: `task_completed` in the parent conversation; cron / tic: `read_notification` in the home
 * source plus a `notification` event) is chosen by the job's kind alone, never by the ending.
 */
export type JobEndingInput =
  | { kind: 'final'; finalText: string }
  | { kind: 'cancelled'; partialOutput?: string }
  | { kind: 'failed'; error: string; partialOutput?: string }
  /** The job session could not be started (unknown agent, worker refused). */
  | { kind: 'start_failed'; error: string };

export type JobRunTerminal = 'succeeded' | 'failed' | 'cancelled';

export interface JobEnding {
  status: JobRunTerminal;
  finalResponse: string | null;
  partialOutput: string | null;
  error: string | null;
  /** What the model reads as the `result` of the delivered call: prose, never a code. */
  resultText: string;
  /** `task_update.state`. */
  taskState: 'completed' | 'failed' | 'cancelled';
}

const MAX_PARTIAL = 8_000;

function partialProse(partial: string | undefined): string {
  const p = (partial ?? '').trim();
  if (!p) return 'It produced no output before it ended.';
  const cut = p.length > MAX_PARTIAL ? `${p.slice(0, MAX_PARTIAL)}\n[partial output truncated]` : p;
  return `Partial output before it ended:\n${cut}`;
}

export function classifyEnding(input: JobEndingInput, title: string): JobEnding {
  switch (input.kind) {
    case 'final':
      return {
        status: 'succeeded',
        finalResponse: input.finalText,
        partialOutput: null,
        error: null,
        resultText: input.finalText,
        taskState: 'completed',
      };
    case 'cancelled':
      return {
        status: 'cancelled',
        finalResponse: null,
        partialOutput: input.partialOutput ?? null,
        error: 'cancelled',
        resultText: `The task "${title}" was cancelled before it finished. ${partialProse(input.partialOutput)}`,
        taskState: 'cancelled',
      };
    case 'failed':
      return {
        status: 'failed',
        finalResponse: null,
        partialOutput: input.partialOutput ?? null,
        error: input.error,
        resultText: `The task "${title}" failed: ${input.error}. ${partialProse(input.partialOutput)}`,
        taskState: 'failed',
      };
    case 'start_failed':
      return {
        status: 'failed',
        finalResponse: null,
        partialOutput: null,
        error: input.error,
        resultText: `The task "${title}" could not be started: ${input.error}.`,
        taskState: 'failed',
      };
  }
}

/** The one-line summary of a cron run's ending (the `notification` event and `GET /api/notifications`). */
export function notificationSummary(title: string, e: Pick<JobEnding, 'status' | 'error' | 'resultText'>): string {
  switch (e.status) {
    case 'succeeded':
      return `Cron job "${title}" finished: ${notificationLine(e.resultText, 200)}`;
    case 'cancelled':
      return `Cron job "${title}" was cancelled`;
    case 'failed':
      return `Cron job "${title}" failed: ${notificationLine(e.error ?? '', 300)}`;
  }
}

/** A stored terminal run read back as the input it was classified from (for a re-delivery, the history). */
export function endingInputOf(run: {
  status: string;
  final_response: string | null;
  partial_output: string | null;
  error: string | null;
}): JobEndingInput {
  if (run.status === 'succeeded') return { kind: 'final', finalText: run.final_response ?? '' };
  if (run.status === 'cancelled') return { kind: 'cancelled', partialOutput: run.partial_output ?? undefined };
  return { kind: 'failed', error: run.error ?? 'the task failed', partialOutput: run.partial_output ?? undefined };
}
