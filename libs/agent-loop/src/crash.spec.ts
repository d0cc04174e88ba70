/**
 * Randomized crash test: scripted turns mixing tools, sub-agents, parallel
 * batches and approvals; crash after the k-th store commit for every k (which includes every
 * point between a tool's side effect and its record); recover in fresh objects from the
 * serialised snapshot; check the invariants. Reproduce with FC_SEED=<n>.
 */
import { projectMessages } from './projection';
import {
  agent,
  FakeGate,
  FakeHuman,
  InMemoryStore,
  LoopHarness,
  SimulatedCrash,
  defaultSession,
  type FakeToolDefinition,
  type RecordedLlmCall,
  type ScriptStep,
} from './testing';
import type { TurnOutcome, WireMessage } from './types';

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Call = { name: string; arguments: Record<string, unknown> };
/** Per agent: the tool calls of each round, then a final text. */
type Plan = Record<string, Call[][]>;

const CHILDREN = ['alpha', 'beta', 'gamma'];

function generatePlan(rand: () => number): Plan {
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];
  let nonce = 0;
  const simple = (): Call => {
    const n = ++nonce;
    return pick<Call>([
      { name: 'read_file', arguments: { path: `f${n}.txt` } },
      { name: 'write_file', arguments: { path: `w${n}.txt`, content: 'x', reject: rand() < 0.3 } },
      { name: 'execute_cmd', arguments: { command: `make t${n}`, approve: rand() < 0.5, reject: rand() < 0.2 } },
      { name: 'update_scratchpad', arguments: { key: `k${n % 3}`, value: `v${n}` } },
    ]);
  };
  const plan: Plan = {};
  for (const child of CHILDREN) {
    plan[child] = Array.from({ length: Math.floor(rand() * 3) }, () =>
      rand() < 0.3
        ? [
            { name: 'read_file', arguments: { path: `c${++nonce}` } },
            { name: 'read_file', arguments: { path: `c${++nonce}` } },
          ]
        : [simple()],
    );
  }
  const rounds = 1 + Math.floor(rand() * 3);
  plan['main'] = Array.from({ length: rounds }, () => {
    const r = rand();
    if (r < 0.25) return [simple()];
    if (r < 0.4) return [simple(), simple()];
    if (r < 0.55)
      return [0, 1, 2]
        .slice(0, 2 + Math.floor(rand() * 2))
        .map(() => ({ name: 'read_file', arguments: { path: `p${++nonce}` } }));
    if (r < 0.75) return [{ name: 'execute_task', arguments: { agent_id: pick(CHILDREN), prompt: `job ${++nonce}` } }];
    return [
      { name: 'execute_task', arguments: { agent_id: pick(CHILDREN), prompt: `job ${++nonce}` } },
      { name: 'execute_task', arguments: { agent_id: pick(CHILDREN), prompt: `job ${++nonce}` } },
    ];
  });
  return plan;
}

function systemText(m: WireMessage): string {
  return typeof m.content === 'string'
    ? m.content
    : (m.content ?? []).map((p) => (typeof p === 'string' ? p : 'text' in p ? p.text : '')).join('');
}

function responder(plan: Plan): (req: RecordedLlmCall) => ScriptStep {
  return (req) => {
    const system = systemText(req.messages[0]);
    const agentId = system.startsWith('AGENT ') ? system.slice('AGENT '.length) : 'main';
    const round = req.messages.filter((m) => m.role === 'assistant').length;
    const rounds = plan[agentId];
    if (round < rounds.length) {
      return {
        toolCalls: rounds[round].map((c, i) => ({
          id: `${agentId}_r${round}_${i}`,
          name: c.name,
          arguments: c.arguments,
        })),
      };
    }
    return { content: `${agentId} final` };
  };
}

/** The outside world: survives crashes (like files on disk). */
class World {
  runs = new Map<string, number>();
  tools(): FakeToolDefinition[] {
    const effect = (
      name: string,
      restartHint: 'reExecute' | 'markInterrupted',
      concurrencySafe: boolean,
    ): FakeToolDefinition => ({
      name,
      restartHint,
      concurrencySafe,
      run: async (_args, _signal, _progress, call) => {
        this.runs.set(call.toolCallId, (this.runs.get(call.toolCallId) ?? 0) + 1);
        await Promise.resolve();
        return {
          ok: true,
          content: `${name} ok`,
          ...(name === 'write_file' ? { changedPaths: ['/workspace/x'] } : {}),
        };
      },
    });
    return [
      effect('read_file', 'reExecute', true),
      effect('write_file', 'reExecute', false),
      effect('execute_cmd', 'markInterrupted', false),
    ];
  }
}

function harness(world: World, plan: Plan, store: InMemoryStore, idPrefix: string): LoopHarness {
  return new LoopHarness({
    store,
    idPrefix,
    agents: CHILDREN.map((id) => agent({ id, prompt: `AGENT ${id}` })),
    tools: world.tools(),
    script: responder(plan),
    gate: new FakeGate((req) => {
      const args = req.arguments as Record<string, unknown>;
      if (req.name === 'write_file' || (req.name === 'execute_cmd' && !args['approve'])) return { kind: 'require' };
      return { kind: 'allow' };
    }),
    human: new FakeHuman((req) => {
      const args = req.kind === 'approval' ? (req.arguments as Record<string, unknown>) : {};
      return args['reject'] ? { kind: 'rejected', note: 'no' } : { kind: 'approved' };
    }),
    config: { maxToolRounds: 8 },
  });
}

function freshStore(): InMemoryStore {
  const store = new InMemoryStore();
  store.addSession(defaultSession());
  store.addInbox({
    id: '00000000-0000-4000-8000-00000000f00d',
    sessionId: 'session-1',
    clientMessageId: 'c-1',
    content: 'please do the work',
    attachments: null,
    delivery: 'steer',
    createdAt: '2026-01-01T00:00:00Z',
  });
  return store;
}

const INPUT = { kind: 'inbox' as const, inboxId: '00000000-0000-4000-8000-00000000f00d' };

function checkInvariants(store: InMemoryStore, world: World, outcome: TurnOutcome, label: string): void {
  const state = store.view();
  const fail = (msg: string): never => {
    throw new Error(`${label}: ${msg}`);
  };
  if (outcome.kind !== 'final') fail(`turn ended ${outcome.kind}`);
  // the history of every frame projects to a valid OpenAI message sequence
  for (const frame of state.frames) {
    const wire = projectMessages({
      systemPrompt: 's',
      substitutions: {},
      cacheControl: false,
      scratchpad: [],
      compactionSummary: null,
      messages: state.messages.filter((m) => m.frameId === frame.id),
      toolCalls: state.toolCalls.filter((c) => c.frameId === frame.id),
      maxHistoryMessages: null,
      maxToolResultChars: null,
      dynamicTail: null,
      tailReminder: null,
    });
    let open: string[] = [];
    for (const m of wire) {
      if (m.role === 'tool') {
        if (!open.includes(m.tool_call_id)) fail(`orphan or duplicate tool message ${m.tool_call_id}`);
        open = open.filter((id) => id !== m.tool_call_id);
        continue;
      }
      if (open.length > 0) fail(`unanswered tool calls ${open.join(',')}`);
      if (m.role === 'assistant' && m.tool_calls) {
        open = m.tool_calls.map((c) => c.id);
        if (new Set(open).size !== open.length) fail('duplicate tool call ids in one message');
      }
    }
    if (open.length > 0) fail(`unanswered tool calls at the end ${open.join(',')}`);
  }
  for (const call of state.toolCalls) {
    const runs = world.runs.get(call.id) ?? 0;
    if (['pending', 'running', 'awaiting_human'].includes(call.status)) {
      const frame = state.frames.find((f) => f.id === call.frameId);
      fail(`call ${call.name} left ${call.status} in frame depth ${frame?.depth} (${frame?.status})`);
    }
    if (call.name === 'execute_cmd' && runs > 1) fail(`markInterrupted tool ran ${runs} times`);
    if (call.status === 'rejected' && runs > 0) fail(`rejected call ${call.name} ran`);
    if (call.status === 'cancelled' && runs > 1) fail(`cancelled call ${call.name} re-ran`);
  }
  const agentDone = store.events().filter((e) => e.type === 'agent_done');
  for (const frame of state.frames.filter((f) => f.depth > 0)) {
    if (frame.status !== 'closed') fail(`child frame ${frame.id} not closed`);
    const n = agentDone.filter((e) => e.type === 'agent_done' && e.stack_id === frame.id).length;
    if (n !== 1) fail(`child frame ${frame.id} announced closed ${n} times`);
  }
  const seqs = store.events().map((e) => e.seq);
  if (seqs.some((s, i) => s !== i + 1)) fail('event seq not contiguous');
  if (store.events().filter((e) => e.type === 'done').length !== 1) fail('expected exactly one done event');
  if (state.sessions[0].turnState !== 'finished') fail('turn not finished');
}

async function driveToOutcome(
  world: World,
  plan: Plan,
  store: InMemoryStore,
  attempt: number,
): Promise<{ store: InMemoryStore; outcome: TurnOutcome }> {
  let current = InMemoryStore.fromSnapshot(store.snapshot());
  let outcome = await harness(world, plan, current, `r${attempt}`).recover();
  if (outcome.kind === 'idle' && current.inboxState(INPUT.inboxId) === 'pending') {
    current = InMemoryStore.fromSnapshot(current.snapshot());
    outcome = await harness(world, plan, current, `s${attempt}`).run(INPUT);
  }
  return { store: current, outcome };
}

describe('crash test', () => {
  it('recovers from a crash after every commit of randomized turns, keeping every invariant', async () => {
    const seed = process.env['FC_SEED'] ? Number(process.env['FC_SEED']) : Math.floor(Math.random() * 2 ** 31);
    const rand = mulberry32(seed);
    const scenarios = Number(process.env['CRASH_SCENARIOS'] ?? 16);
    let crashPoints = 0;
    let betweenEffectAndRecord = 0;
    try {
      for (let s = 0; s < scenarios; s++) {
        const plan = generatePlan(rand);
        const clean = new World();
        const baseline = freshStore();
        const outcome = await harness(clean, plan, baseline, 'a').run(INPUT);
        checkInvariants(baseline, clean, outcome, `scenario ${s} without crash`);
        const total = baseline.commitCount;
        for (let k = 0; k < total; k++) {
          const world = new World();
          const store = freshStore();
          store.crashAfterCommits(k);
          const runsBefore = (): number => [...world.runs.values()].reduce((a, b) => a + b, 0);
          let effects = 0;
          await expect(
            harness(world, plan, store, 'a')
              .run(INPUT)
              .finally(() => (effects = runsBefore())),
          ).rejects.toBeInstanceOf(SimulatedCrash);
          const lastCommit = baseline.log[k];
          if (lastCommit && lastCommit.events.some((e) => e.type === 'tool_done') && effects > 0)
            betweenEffectAndRecord++;
          crashPoints++;
          const recovered = await driveToOutcome(world, plan, store, k);
          checkInvariants(
            recovered.store,
            world,
            recovered.outcome,
            `scenario ${s}, crash after commit ${k} (seed ${seed})`,
          );
        }
      }
    } finally {
      process.stdout.write(
        `crash test: seed=${seed} scenarios=${scenarios} crash points tried=${crashPoints} (of which before a tool record: ${betweenEffectAndRecord}) — reproduce with FC_SEED=${seed}\n`,
      );
    }
    expect(crashPoints).toBeGreaterThan(scenarios);
  }, 120_000);
});

/**
 * The model's answer is committed in one commit with its calls `pending` and the first call's
 * `tool_start`; a tool that re-runs safely is not marked `running` before it runs. A crash after
 * that commit — before the call's record — recovers from the stored calls: the model is not asked
 * for that round again, a re-runnable call runs again, a call that may not run twice does not.
 */
describe('crash after the answer commit', () => {
  it.each([
    ['read_file', { path: 'a.txt' }, 'done', 2],
    ['execute_cmd', { command: 'make', approve: true }, 'interrupted', 1],
  ] as const)('%s: recovered without asking the model again', async (name, args, status, runs) => {
    const plan: Plan = { main: [[{ name, arguments: { ...args } }]], alpha: [], beta: [], gamma: [] };
    const world = new World();
    const store = freshStore();
    store.crashOn((_mutations, events) => events.some((e) => e.type === 'tool_done'));
    const first = harness(world, plan, store, 'a');
    await expect(first.run(INPUT)).rejects.toBeInstanceOf(SimulatedCrash);
    expect(first.model.calls).toHaveLength(1);
    const answer = store.log.find((c) => c.mutations.some((m) => m.kind === 'createToolCall'));
    expect(answer?.events.map((e) => e.type)).toContain('tool_start');
    expect(world.runs.size).toBe(1);

    const current = InMemoryStore.fromSnapshot(store.snapshot());
    const again = harness(world, plan, current, 'r');
    const outcome = await again.recover();
    checkInvariants(current, world, outcome, `crash after the answer of ${name}`);
    // Only the round after the call's result was asked: the stored answer was not asked again.
    expect(again.model.calls).toHaveLength(1);
    const call = current.view().toolCalls.find((c) => c.name === name);
    expect(call?.status).toBe(status);
    expect(world.runs.get(call!.id)).toBe(runs);
  });
});
