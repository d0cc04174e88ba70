export { startLlmSim, DEFAULT_SIM_MODELS, type LlmSim } from './sim-server';
export { LlmSimAdminClient, LlmSimAdminError, type SimRemoteScriptInput } from './sim-admin-client';
export { validateChatRequest, type SimValidationError, type SimValidationResult } from './sim-validation';
export { SimScriptError } from './sim-script-store';
export { simFail } from './sim-replies';
export type {
  LlmSimOptions,
  SimChatRequest,
  SimCompletionReply,
  SimFailure,
  SimFailureReply,
  SimFinishReason,
  SimLatency,
  SimMatchIn,
  SimOutcome,
  SimReply,
  SimReplyFn,
  SimReplySpec,
  SimRequestContext,
  SimRequestLogEntry,
  SimRequestQuery,
  SimScriptInfo,
  SimScriptInput,
  SimToolCall,
  SimUsage,
  SimWireMessage,
} from './sim-types';
