import { Inject, Injectable } from '@nestjs/common';
import { METRICS_REGISTRY } from '@skald/service-kit/ops';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Prometheus metrics of the session worker. */
@Injectable()
export class TurnMetrics {
  readonly turnsStarted: Counter;
  /** Turns started from input by where their history came from: `carried` (this worker's memory) or `read` (the database). */
  readonly turnHistory: Counter<'from'>;
  readonly turnsFinished: Counter<'outcome'>;
  readonly leaseTakeovers: Counter;
  /** Running turns whose lease expired and that no sweep recovered within two intervals. */
  readonly stuckTurns: Gauge;
  /** Model rounds: answered LLM calls of a turn's rounds (compaction calls not counted). */
  readonly rounds: Counter;
  /** Turns that started waiting for a human, by kind (approval, clarification). */
  readonly humanWaits: Counter<'kind'>;
  /** Steps of tool calls announced by this worker (started, awaits_human, done, failed, cancelled, rejected). */
  readonly toolCallSteps: Counter<'step'>;
  readonly llmSeconds: Histogram<'client' | 'outcome'>;
  readonly llmTokens: Counter<'client' | 'kind'>;
  /** Inbox items not yet taken into a conversation (all sessions). */
  readonly inboxPending: Gauge;
  /** Sessions this worker drives now (its turn concurrency), read at each scrape from `countDriving`'s source. */
  readonly sessionsDriving: Gauge;
  private drivingSource: () => number = () => 0;

  constructor(@Inject(METRICS_REGISTRY) registry: Registry) {
    this.turnsStarted = new Counter({
      name: 'skald_turns_started_total',
      help: 'Turns started from user input (counted when the input entered the conversation)',
      registers: [registry],
    });
    this.turnsFinished = new Counter({
      name: 'skald_turns_finished_total',
      help: 'Turn runs ended, by outcome',
      labelNames: ['outcome'],
      registers: [registry],
    });
    this.leaseTakeovers = new Counter({
      name: 'skald_lease_takeovers_total',
      help: 'Leases taken over from an owner whose lease expired without being released',
      registers: [registry],
    });
    this.rounds = new Counter({
      name: 'skald_rounds_total',
      help: 'Model rounds answered (LLM calls of turn rounds, not compaction)',
      registers: [registry],
    });
    this.humanWaits = new Counter({
      name: 'skald_human_waits_total',
      help: 'Times a turn started waiting for a human, by kind',
      labelNames: ['kind'],
      registers: [registry],
    });
    this.toolCallSteps = new Counter({
      name: 'skald_tool_call_steps_total',
      help: 'Tool call steps announced (started, awaits_human, done, failed, cancelled, rejected), those logged at debug included',
      labelNames: ['step'],
      registers: [registry],
    });
    this.llmSeconds = new Histogram({
      name: 'skald_llm_request_seconds',
      help: 'Streaming LLM calls, start to last token, by client and outcome',
      labelNames: ['client', 'outcome'],
      buckets: [0.25, 0.5, 1, 2, 5, 10, 20, 40, 80, 160],
      registers: [registry],
    });
    this.llmTokens = new Counter({
      name: 'skald_llm_tokens_total',
      help: 'Tokens of answered LLM calls (provider usage, or estimated), by client and kind (input, output)',
      labelNames: ['client', 'kind'],
      registers: [registry],
    });
    this.turnHistory = new Counter({
      name: 'skald_turn_history_total',
      help: "Turns started from user input, by where the history came from: 'carried' (kept by this worker since the session's last turn here) or 'read' (the whole history read from the database)",
      labelNames: ['from'],
      registers: [registry],
    });
    this.inboxPending = new Gauge({
      name: 'skald_inbox_pending',
      help: 'Messages and deliveries stored in session inboxes and not yet taken into a conversation',
      registers: [registry],
    });
    const driving = (): number => this.drivingSource();
    this.sessionsDriving = new Gauge({
      name: 'skald_sessions_driving',
      help: 'Sessions this worker drives now (holds the lease of and runs turns for)',
      registers: [registry],
      collect() {
        this.set(driving());
      },
    });
    this.stuckTurns = new Gauge({
      name: 'skald_stuck_turns',
      help: 'Running turns whose lease expired more than two sweep intervals ago',
      registers: [registry],
    });
  }

  /** Where `skald_sessions_driving` reads its value (the turn driver's count of sessions it drives). */
  countDriving(source: () => number): void {
    this.drivingSource = source;
  }
}
