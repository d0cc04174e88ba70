export { LlmManager, type LlmClientStatus, type LlmManagerOptions, type LlmSelectedClient } from './llm-manager';
export {
  resolveLlmClients,
  DEFAULT_LLM_IDLE_TIMEOUT_MS,
  DEFAULT_LLM_PRIORITY,
  DEFAULT_LLM_TIMEOUT_MS,
  type LlmClientConfig,
  type LlmClientDefinition,
  type LlmPricing,
  type LlmVisionLimits,
} from './llm-client-config';
export { CHARS_PER_TOKEN, costOf, estimateInputTokens, estimateOutputTokens, meterCall } from './llm-metering';
export { ResilientLlmHealthStore, type ResilientHealthOptions } from './llm-health-resilient';
export { CachedLlmHealthStore, type CachedHealthOptions } from './llm-health-cached';
export { ThrottledLlmHealthStore, type ThrottledHealthOptions } from './llm-health-throttled';
export {
  loadLlmConfigFromEnv,
  DEFAULT_CLIENT_NAME,
  DEFAULT_OPENAI_BASE_URL,
  type LlmEnvConfig,
} from './llm-config-from-env';
export { LlmConfigError } from './llm-config.error';
export { LlmCallError, type LlmErrorKind } from './llm-call.error';
export {
  InMemoryLlmHealthStore,
  healthStateFor,
  initialHealth,
  DEGRADED_AFTER_FAILURES,
  DOWN_AFTER_FAILURES,
  type LlmHealth,
  type LlmHealthState,
  type LlmHealthStore,
} from './llm-health';
export {
  selectLlmClient,
  type LlmClientDescriptor,
  type LlmSelectReason,
  type LlmSelectRequest,
  type LlmSelection,
} from './llm-selection';
export { LLM_STRENGTHS, isLlmStrength, strengthRank, type LlmStrength } from './llm-strength';
export type {
  LlmChatRequest,
  LlmChatResult,
  LlmDelta,
  LlmFinishReason,
  LlmImagePart,
  LlmMeteredUsage,
  LlmTextPart,
  LlmToolCall,
  LlmToolDefinition,
  LlmUsage,
  LlmWireMessage,
  LlmWireToolCall,
} from './llm-wire.types';
export { createLlmHttpFetch, type LlmHttpResponse } from './llm-http-fetch';
