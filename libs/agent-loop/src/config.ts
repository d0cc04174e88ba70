import { DEFAULT_LLM_RETRY } from './llm-retry';
import type { LoopConfig } from './ports';

/** Defaults of the loop's configuration (spec 000 AgentRunConfig, ARCHITECTURE.md). */
export const DEFAULT_LOOP_CONFIG: LoopConfig = {
  maxToolRounds: 25,
  maxLlmAttempts: 3,
  llmRetry: DEFAULT_LLM_RETRY,
  maxParallelCalls: 4,
  maxHistoryMessages: 100,
  maxToolResultChars: null,
  compaction: null,
  contextBudgetTokens: null,
  maxDepth: 5,
  os: 'Linux',
  defaultWorkingDirectory: null,
};

/** Fill a partial configuration with the defaults. */
export function resolveLoopConfig(partial: Partial<LoopConfig> = {}): LoopConfig {
  return { ...DEFAULT_LOOP_CONFIG, ...partial };
}
