import { DEFAULT_LLM_RETRY, resolveLoopConfig, type LoopConfig } from '@skald/agent-loop';
import type { WorkerConfig } from '../config';

/** The agent loop's configuration from the worker's (`SKALD_*`); what it does not set keeps the loop's default. */
export function loopConfigOf(
  config: WorkerConfig,
  host: { os: string; defaultWorkingDirectory: string | null },
): LoopConfig {
  return resolveLoopConfig({
    maxToolRounds: config.SKALD_MAX_TOOL_ROUNDS,
    maxLlmAttempts: config.SKALD_LLM_MAX_CLIENTS,
    llmRetry: {
      ...DEFAULT_LLM_RETRY,
      triesPerClient: config.SKALD_LLM_RETRY_TRIES,
      maxWaitMs: config.SKALD_LLM_RETRY_MAX_WAIT_S * 1000,
    },
    maxParallelCalls: config.SKALD_MAX_PARALLEL_CALLS,
    maxDepth: config.SKALD_MAX_AGENT_DEPTH,
    maxHistoryMessages: config.SKALD_MAX_HISTORY_MESSAGES,
    maxToolResultChars: config.SKALD_MAX_TOOL_RESULT_CHARS ?? null,
    compaction: config.SKALD_COMPACTION_THRESHOLD_TOKENS
      ? {
          thresholdTokens: config.SKALD_COMPACTION_THRESHOLD_TOKENS,
          keepRecent: config.SKALD_COMPACTION_KEEP_RECENT,
          strength: config.SKALD_COMPACTION_STRENGTH ?? null,
        }
      : null,
    contextBudgetTokens: config.SKALD_CONTEXT_BUDGET_TOKENS ?? null,
    os: host.os,
    defaultWorkingDirectory: host.defaultWorkingDirectory,
  });
}
