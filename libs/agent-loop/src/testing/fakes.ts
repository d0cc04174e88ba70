import type {
  AgentCatalogPort,
  AgentDefinition,
  AgentSummary,
  ApprovalPreview,
  AsyncTaskPort,
  ClockPort,
  EventSink,
  GateDecision,
  GatePort,
  GateRequest,
  VisibilityRequest,
  HumanAnswer,
  HumanRequest,
  HumanWaitPort,
  IdsPort,
  MemoryPort,
  RestartHint,
  ToolContext,
  ToolExecution,
  ToolInvocation,
  ToolProgress,
  ToolResult,
  ToolRunOptions,
  ToolSetPort,
  ToolSpec,
} from '../ports';
import type { EphemeralEvent } from '../types';
import { isRecord } from '../json';

/** Deterministic UUID-shaped ids: `00000000-0000-4000-8000-<prefix><counter>`. */
export class SequentialIds implements IdsPort {
  private n = 0;
  constructor(private readonly prefix = 'a') {}
  newId(): string {
    this.n += 1;
    const tail = `${this.prefix}${this.n.toString(16)}`.padStart(12, '0').slice(-12);
    return `00000000-0000-4000-8000-${tail}`;
  }
}

export class FixedClock implements ClockPort {
  constructor(
    private date = new Date('2026-06-17T20:20:00Z'),
    private readonly zone = 'Europe/Rome',
  ) {}
  now(): Date {
    return new Date(this.date);
  }
  timeZone(): string {
    return this.zone;
  }
  advance(ms: number): void {
    this.date = new Date(this.date.getTime() + ms);
  }
  /** Every wait asked for, in ms. A wait passes at once, advancing the clock (unless aborted). */
  readonly sleeps: number[] = [];
  /** Called when a wait starts (a test can abort the turn there). */
  onSleep: ((ms: number) => void) | null = null;
  sleep(ms: number, signal: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    this.onSleep?.(ms);
    if (!signal.aborted) this.advance(ms);
    return Promise.resolve();
  }
}

export class RecordingSink implements EventSink {
  readonly events: EphemeralEvent[] = [];
  ephemeral(event: EphemeralEvent): void {
    this.events.push(event);
  }
}

/**
 * Decisions by tool name (default `allow`), or by a function. Records every check. `hidden`:
 * names an unconditional Deny hides from the model (`visibleTools`).
 */
export class FakeGate implements GatePort {
  readonly checks: GateRequest[] = [];
  readonly hidden = new Set<string>();
  constructor(private readonly rules: Record<string, GateDecision> | ((req: GateRequest) => GateDecision) = {}) {}
  async visibleTools(request: VisibilityRequest): Promise<ReadonlySet<string> | null> {
    return new Set(request.names.filter((n) => !this.hidden.has(n)));
  }
  async check(request: GateRequest): Promise<GateDecision> {
    this.checks.push(structuredClone(request));
    if (typeof this.rules === 'function') return this.rules(request);
    return Object.hasOwn(this.rules, request.name) ? this.rules[request.name] : { kind: 'allow' };
  }
  /** The landing's first path when it is not the call's `path` argument (the fake names paths absolute). */
  landsAt(request: GateRequest, landing: ReadonlyArray<string | null>): string | null {
    const named = isRecord(request.arguments) ? request.arguments['path'] : undefined;
    const judged = landing[0];
    return typeof judged === 'string' && judged !== named ? judged : null;
  }
}

/** Answers from a queue or a function; `'wait'` waits until the signal aborts (then cancelled). */
export class FakeHuman implements HumanWaitPort {
  readonly requests: HumanRequest[] = [];
  private readonly queue: (HumanAnswer | 'wait')[];
  constructor(answers: (HumanAnswer | 'wait')[] | ((req: HumanRequest) => HumanAnswer | 'wait') = []) {
    this.queue = Array.isArray(answers) ? [...answers] : [];
    this.fn = Array.isArray(answers) ? null : answers;
  }
  private readonly fn: ((req: HumanRequest) => HumanAnswer | 'wait') | null;
  push(...answers: (HumanAnswer | 'wait')[]): void {
    this.queue.push(...answers);
  }
  async awaitHuman(request: HumanRequest, signal: AbortSignal): Promise<HumanAnswer> {
    this.requests.push(structuredClone(request));
    const answer = this.fn ? this.fn(request) : (this.queue.shift() ?? 'wait');
    if (answer !== 'wait') return answer;
    return new Promise<HumanAnswer>((resolve) => {
      if (signal.aborted) resolve({ kind: 'cancelled' });
      else signal.addEventListener('abort', () => resolve({ kind: 'cancelled' }), { once: true });
    });
  }
}

export interface FakeToolDefinition {
  name: string;
  concurrencySafe?: boolean;
  restartHint?: RestartHint;
  rootAgentOnly?: boolean;
  subAgentsOnly?: boolean;
  /** Offered only when this group is granted. */
  group?: string;
  run: (
    args: unknown,
    signal: AbortSignal,
    progress: (p: ToolProgress) => void,
    call: ToolInvocation,
    options: ToolRunOptions,
  ) => Promise<ToolResult>;
  preview?: (args: unknown) => Promise<ApprovalPreview | null>;
}

export interface ToolRunRecord {
  toolCallId: string;
  name: string;
  arguments: unknown;
  /** The approved preview's hash handed to `run()`, when there was one. */
  expectedBaseHash?: string;
  /** The landing the gate judged, handed to `run()` when there was one. */
  judgedLanding?: ReadonlyArray<string | null>;
}

/** A tool set from plain functions; records runs (start / end / stop) per durable call id. */
export class FakeToolSet implements ToolSetPort {
  readonly started: ToolRunRecord[] = [];
  readonly finished: string[] = [];
  readonly stopped: string[] = [];
  readonly contexts: ToolContext[] = [];
  private readonly tools = new Map<string, FakeToolDefinition>();
  constructor(
    tools: FakeToolDefinition[] = [],
    private readonly extraGroups: string[] = [],
  ) {
    for (const t of tools) this.tools.set(t.name, t);
  }
  add(tool: FakeToolDefinition): void {
    this.tools.set(tool.name, tool);
  }
  async definitions(ctx: ToolContext): Promise<ToolSpec[]> {
    this.contexts.push(structuredClone(ctx));
    return [...this.tools.values()]
      .filter((t) => !t.group || ctx.grants.includes(t.group))
      .map((t) => ({
        definition: {
          type: 'function',
          function: { name: t.name, description: t.name, parameters: { type: 'object' } },
        },
        ...(t.rootAgentOnly ? { rootAgentOnly: true } : {}),
        ...(t.subAgentsOnly ? { subAgentsOnly: true } : {}),
      }));
  }
  async groups(): Promise<string[]> {
    const groups = [...this.tools.values()].map((t) => t.group).filter((g): g is string => !!g);
    return [...new Set([...groups, ...this.extraGroups])];
  }
  build(call: ToolInvocation): ToolExecution {
    const tool = this.tools.get(call.name);
    const { started, finished, stopped } = this;
    if (!tool) {
      return {
        concurrencySafe: false,
        restartHint: 'reExecute',
        run: async () => ({ ok: false, error: `unknown tool ${call.name}` }),
        stop: () => undefined,
      };
    }
    return {
      concurrencySafe: tool.concurrencySafe ?? false,
      restartHint: tool.restartHint ?? 'reExecute',
      async run(signal, onProgress, options = {}) {
        started.push({
          toolCallId: call.toolCallId,
          name: call.name,
          arguments: structuredClone(call.arguments),
          ...(options.expectedBaseHash !== undefined ? { expectedBaseHash: options.expectedBaseHash } : {}),
          ...(options.judgedLanding !== undefined ? { judgedLanding: [...options.judgedLanding] } : {}),
        });
        const result = await tool.run(call.arguments, signal, onProgress, call, options);
        finished.push(call.toolCallId);
        return result;
      },
      stop() {
        stopped.push(call.toolCallId);
      },
      ...(tool.preview ? { preview: () => tool.preview!(call.arguments) } : {}),
    };
  }
  runsOf(name: string): ToolRunRecord[] {
    return this.started.filter((r) => r.name === name);
  }
}

export function agent(partial: Partial<AgentDefinition> & { id: string }): AgentDefinition {
  return {
    name: partial.id,
    description: null,
    prompt: `You are ${partial.id}.`,
    type: 'task',
    client: null,
    strength: null,
    tools: { allows: () => true },
    substitutions: {},
    tailReminder: null,
    ...partial,
  };
}

export class FakeCatalog implements AgentCatalogPort {
  private readonly agents = new Map<string, AgentDefinition>();
  constructor(agents: AgentDefinition[] = []) {
    for (const a of agents) this.agents.set(a.id, a);
  }
  add(a: AgentDefinition): void {
    this.agents.set(a.id, a);
  }
  async getAgent(agentId: string): Promise<AgentDefinition | null> {
    return this.agents.get(agentId) ?? null;
  }
  async listTaskAgents(): Promise<AgentSummary[]> {
    return [...this.agents.values()]
      .filter((a) => a.type === 'task')
      .map((a) => ({ id: a.id, name: a.name, description: a.description, strength: a.strength }));
  }
}

export class FakeTasks implements AsyncTaskPort {
  readonly submitted: Parameters<AsyncTaskPort['submitAsync']>[0][] = [];
  async submitAsync(request: Parameters<AsyncTaskPort['submitAsync']>[0]): Promise<{ jobId: string }> {
    this.submitted.push(structuredClone(request));
    return { jobId: `job-${this.submitted.length}` };
  }
}

export class FakeMemory implements MemoryPort {
  readonly queries: string[] = [];
  /** The texts `expectQuery` was told, in order. */
  readonly expected: string[] = [];
  constructor(
    private readonly context: string | null,
    /** `MemoryPort.readTool`: the context is given only to a frame offered it. */
    readonly readTool?: string,
  ) {}
  expectQuery(_sessionId: string, userText: string): void {
    this.expected.push(userText);
  }
  async queryContext(_sessionId: string, userText: string): Promise<string | null> {
    this.queries.push(userText);
    return this.context;
  }
}
