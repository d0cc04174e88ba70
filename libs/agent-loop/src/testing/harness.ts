import { resolveLoopConfig } from '../config';
import type { AgentDefinition, HumanAnswer, LoopConfig, LoopDeps } from '../ports';
import { recoverTurn, resolvePendingCall, runTurn, type TurnInput } from '../run-turn';
import type { InboxDelivery, SessionEventDraft, SessionInfo, TurnOutcome } from '../types';
import {
  agent,
  FakeCatalog,
  FakeGate,
  FakeHuman,
  FakeTasks,
  FakeToolSet,
  FixedClock,
  RecordingSink,
  SequentialIds,
  type FakeToolDefinition,
} from './fakes';
import { InMemoryStore, type StoredEvent } from './in-memory-store';
import { ScriptedModel, type Responder, type ScriptStep } from './scripted-model';

export interface HarnessOptions {
  script?: ScriptStep[] | Responder;
  clients?: ConstructorParameters<typeof ScriptedModel>[1];
  tools?: FakeToolDefinition[];
  toolGroups?: string[];
  agents?: AgentDefinition[];
  gate?: FakeGate;
  human?: FakeHuman;
  config?: Partial<LoopConfig>;
  session?: Partial<SessionInfo>;
  store?: InMemoryStore;
  idPrefix?: string;
  /** Prefix of the scripted model's call ids (default `call_`). */
  callIdPrefix?: string;
}

export const ROOT_AGENT_ID = 'main';

export function defaultSession(partial: Partial<SessionInfo> = {}): SessionInfo {
  return {
    id: 'session-1',
    userId: 'user-1',
    agentId: ROOT_AGENT_ID,
    source: 'web',
    isInteractive: true,
    isEphemeral: false,
    autoDenyApprovals: false,
    scratchpadSessionId: partial.id ?? 'session-1',
    runContext: { workingDirectory: null, systemPrompt: [] },
    pinnedClient: null,
    turnState: 'finished',
    ...partial,
  };
}

/** Every fake wired together around one session; the deps are plain fields to swap. */
export class LoopHarness {
  readonly store: InMemoryStore;
  readonly model: ScriptedModel;
  readonly gate: FakeGate;
  readonly human: FakeHuman;
  readonly tools: FakeToolSet;
  readonly catalog: FakeCatalog;
  readonly clock = new FixedClock();
  readonly ids: SequentialIds;
  readonly sink = new RecordingSink();
  readonly tasks = new FakeTasks();
  readonly sessionId: string;
  deps: LoopDeps;

  constructor(options: HarnessOptions = {}) {
    this.model = new ScriptedModel(options.script ?? [], options.clients, options.callIdPrefix);
    this.gate = options.gate ?? new FakeGate();
    this.human = options.human ?? new FakeHuman();
    this.tools = new FakeToolSet(options.tools ?? [], options.toolGroups ?? []);
    this.catalog = new FakeCatalog([
      agent({ id: ROOT_AGENT_ID, type: 'chat', prompt: 'You are the main agent.' }),
      ...(options.agents ?? []),
    ]);
    this.ids = new SequentialIds(options.idPrefix ?? 'a');
    if (options.store) {
      this.store = options.store;
      this.sessionId = options.session?.id ?? 'session-1';
    } else {
      this.store = new InMemoryStore();
      const session = defaultSession(options.session);
      this.store.addSession(session);
      this.sessionId = session.id;
    }
    this.deps = {
      store: this.store,
      gate: this.gate,
      human: this.human,
      tools: this.tools,
      llm: this.model,
      events: this.sink,
      catalog: this.catalog,
      clock: this.clock,
      ids: this.ids,
      tasks: this.tasks,
      config: resolveLoopConfig(options.config),
    };
  }

  run(input: string | TurnInput, signal?: AbortSignal): Promise<TurnOutcome> {
    const turnInput: TurnInput = typeof input === 'string' ? { kind: 'message', content: input } : input;
    return runTurn(this.deps, { sessionId: this.sessionId, input: turnInput, ...(signal ? { signal } : {}) });
  }

  recover(signal?: AbortSignal): Promise<TurnOutcome> {
    return recoverTurn(this.deps, { sessionId: this.sessionId, ...(signal ? { signal } : {}) });
  }

  resolve(toolCallId: string, answer: HumanAnswer, signal?: AbortSignal): Promise<TurnOutcome> {
    return resolvePendingCall(this.deps, {
      sessionId: this.sessionId,
      toolCallId,
      answer,
      ...(signal ? { signal } : {}),
    });
  }

  /** Put a message in the session's inbox (as the worker does on `session.submit`). */
  enqueue(content: string, delivery: InboxDelivery = 'steer', clientMessageId?: string): string {
    const id = this.ids.newId();
    this.store.addInbox({
      id,
      sessionId: this.sessionId,
      clientMessageId: clientMessageId ?? `client-${id.slice(-4)}`,
      content,
      attachments: null,
      delivery,
      createdAt: this.clock.now().toISOString(),
    });
    return id;
  }

  events(): StoredEvent[] {
    return this.store.events(this.sessionId);
  }

  eventTypes(): SessionEventDraft['type'][] {
    return this.events().map((e) => e.type);
  }

  eventsOf<T extends SessionEventDraft['type']>(type: T): Extract<StoredEvent, { type: T }>[] {
    return this.events().filter((e): e is Extract<StoredEvent, { type: T }> => e.type === type);
  }

  /** Tool call rows of the whole session in insertion order. */
  toolCalls() {
    return this.store.view().toolCalls;
  }

  messages() {
    return this.store.view().messages;
  }

  frames() {
    return this.store.view().frames;
  }
}
