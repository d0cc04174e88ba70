// The session worker's implementations of the agent-loop's ports (libs/agent-loop/src/ports.ts,
// `LoopDeps`), built for each turn by turns/loop-deps.ts:
//
//   store    SessionStore     session-store/pg-session-store.ts  Postgres, every write fenced by the lease epoch;
//                                                                its rows, reads, mutation SQL, commit and event
//                                                                log each in a file of session-store/
//   llm      LlmPort          llm-adapter.ts                     the LLM manager (@skald/llm), each call's usage
//                                                                in the ledger before the loop sees the answer
//   gate     GatePort         nats-gate.ts                       `approval.check` on the approval service
//   human    HumanWaitPort    nats-human-wait.ts                 a human's answer on the approval service (the turn
//                                                                parks when none comes in time)
//   tools    ToolSetPort      runner-tool-set.ts                 `tools.exec` on a tool runner (runner-watch.ts
//                                                                notices a runner that is gone)
//   tasks    AsyncTaskPort    nats-async-tasks.ts                `execute_task` in async mode, on the scheduler
//   memory   MemoryPort       nats-memory.ts                     the user's memory on the tool runner
//                                                                (`tools.memory_turn`)
//   images   ImagePort        nats-images.ts                     workspace images fitted for a vision client
//                                                                on the tool runner (`tools.image`)
//
// turn-facts.ts remembers, for one turn, what the gate, the tool set and the memory asked. Two ports are
// filled by services of their own features: `catalog` (AgentCatalogPort) by agents/agent-catalog.service.ts,
// which also answers the agents requests, and `events` (EventSink) by turns/event-announcer.ts, which
// announces every committed event. `clock`, `ids` and `config` are built in place by turns/loop-deps.ts.
export { LlmAdapter } from './llm-adapter';
export { NatsAsyncTasks } from './nats-async-tasks';
export { NatsGate } from './nats-gate';
export { answerOf, NatsHumanWait } from './nats-human-wait';
export { NatsImages } from './nats-images';
export { NatsMemory } from './nats-memory';
export { RunnerToolSet } from './runner-tool-set';
export { TurnFacts } from './turn-facts';
export { INBOX_SNAPSHOT_MS, PgSessionStore } from './session-store/pg-session-store';
