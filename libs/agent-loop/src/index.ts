export { runTurn, recoverTurn, resolvePendingCall } from './run-turn';
export type { TurnInput, RunTurnRequest, RecoverTurnRequest, ResolvePendingCallRequest } from './run-turn';
export { LeaseLostError, LlmError } from './ports';
export type {
  AgentCatalogPort,
  AgentDefinition,
  AgentSummary,
  ApprovalPreview,
  AsyncTaskPort,
  ClientSelection,
  ClockPort,
  CompactionConfig,
  EventSink,
  GateDecision,
  GatePort,
  GateRequest,
  HumanAnswer,
  HumanRequest,
  HumanWaitPort,
  IdsPort,
  ListMessagesOptions,
  LlmCallContext,
  LlmClientDescriptor,
  LlmDelta,
  LlmPort,
  LlmRefusal,
  LlmResponse,
  LlmToolCall,
  LlmUsage,
  LoopConfig,
  LoopDeps,
  MemoryPort,
  RestartHint,
  SessionStore,
  ToolContext,
  ToolExecution,
  ToolInvocation,
  ToolProgress,
  ToolResult,
  ToolRunOptions,
  ToolSetPort,
  ToolSpec,
} from './ports';
export * from './types';
export { CallNotAwaitingHumanError, LoopInvariantError } from './errors';
export { DEFAULT_LOOP_CONFIG, resolveLoopConfig } from './config';
export {
  projectMessages,
  dynamicTail,
  toolResultContent,
  type ProjectionInput,
  type DynamicTailInput,
} from './projection';
export {
  CANCELLED_NOTE,
  INTERRUPTED_AFTER_START,
  INTERRUPTED_BEFORE_START,
  rejectionMessage,
  hiddenToolResult,
} from './texts';
export { LOOP_TOOL_NAMES, isLoopTool } from './loop-tools';
export { injectWorkingDirectory } from './paths';
