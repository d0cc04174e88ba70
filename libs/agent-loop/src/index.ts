export { runTurn, recoverTurn, resolvePendingCall } from './run-turn';
export {
  compactSession,
  describeContext,
  type CompactSessionResult,
  type ContextPartName,
  type ContextReport,
} from './maintenance';
export { COMPACTION_PROMPT, SUMMARY_SECTIONS, normaliseSummary, type CompactionResult } from './compaction';
export { estimateTokens, estimateToolTokens } from './tokens';
export type { TurnInput, RunTurnRequest, RecoverTurnRequest, ResolvePendingCallRequest } from './run-turn';
export { LeaseLostError, LlmError } from './ports';
export type {
  AgentCatalogPort,
  AgentDefinition,
  AgentSummary,
  ApprovalPreview,
  PreviewRefusal,
  AsyncTaskPort,
  ClientSelection,
  ClockPort,
  CompactionConfig,
  EventSink,
  GateDecision,
  GatePort,
  GateRequest,
  VisibilityRequest,
  HumanAnswer,
  HumanEdit,
  HumanRequest,
  HumanWaitPort,
  IdsPort,
  ImagePort,
  LoadedImage,
  VisionLimits,
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
export { DEFAULT_LLM_RETRY, retryDelayMs, type LlmRetryPolicy } from './llm-retry';
export { inboxEntry, inboxMessageAt, nextTurnItem, userMessageEvent } from './injection';
export {
  projectMessages,
  projectContext,
  flattenContext,
  applySubstitutions,
  COMPACTION_SUMMARY_HEADER,
  attachmentsBlock,
  TEXT_RENDITION_EXTENSIONS,
  type ContextParts,
  dynamicTail,
  toolResultContent,
  type ProjectionInput,
  type DynamicTailInput,
} from './projection';
export {
  CANCELLED_NOTE,
  INTERRUPTED_AFTER_START,
  INTERRUPTED_AFTER_START_NOTE,
  INTERRUPTED_BEFORE_START,
  AUTO_DENY_REASON,
  rejectionMessage,
  hiddenToolResult,
  cutToolResult,
} from './texts';
export { LOOP_TOOL_NAMES, isLoopTool } from './loop-tools';
export { injectWorkingDirectory, isMemoryPath as isLoopMemoryPath } from './paths';
export {
  MAX_COMMIT_FAILURES,
  TURN_FAILED_MESSAGE,
  turnFailedMessage,
  CALL_ENDED_BY_FAILED_TURN,
  endFailedTurn,
  failureKey,
  nextFailureCount,
  type EndFailedTurnRequest,
  type FailedStep,
} from './failed-turn';
export {
  MAX_TOOL_ARGUMENTS_CHARS,
  TOOL_NAME_PATTERN,
  INVALID_TOOL_NAME,
  callRefusal,
  isValidToolName,
} from './call-checks';
export { MAX_STALE_REASKS, staleLimitMessage } from './tool-call';
export { isPreviewRefusal } from './ports';
