export {
  InMemoryStore,
  SimulatedCrash,
  RejectedCommit,
  type StoreState,
  type StoredEvent,
  type StoredInboxItem,
} from './in-memory-store';
export { ScriptedModel, type ScriptStep, type RecordedLlmCall, type Responder } from './scripted-model';
export {
  SequentialIds,
  FixedClock,
  RecordingSink,
  FakeGate,
  FakeHuman,
  FakeToolSet,
  FakeCatalog,
  FakeTasks,
  FakeMemory,
  agent,
  type FakeToolDefinition,
  type ToolRunRecord,
} from './fakes';
export { LoopHarness, defaultSession, ROOT_AGENT_ID, type HarnessOptions } from './harness';
