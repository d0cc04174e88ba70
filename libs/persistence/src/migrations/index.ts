import { InitialSchema1764460800000 } from './1764460800000-initial-schema';
import { DefaultApprovalRules1764460800001 } from './1764460800001-default-approval-rules';
import { Approvals1764460800100 } from './1764460800100-approvals';
import { ToolRunner1764460800200 } from './1764460800200-tool-runner';
import { PreviewHash1764460800300 } from './1764460800300-preview-hash';
import { RulesVersion1764460800400 } from './1764460800400-rules-version';
import { McpServers1764460800500 } from './1764460800500-mcp-servers';
import { LlmUsage1764460800600 } from './1764460800600-llm-usage';
import { AgentsCatalog1764460800700 } from './1764460800700-agents-catalog';
import { Scheduler1764460800800 } from './1764460800800-scheduler';
import { WsTicketCredential1764460800900 } from './1764460800900-ws-ticket-credential';
import { McpServerTools1764460803000 } from './1764460803000-mcp-server-tools';
import { PoisonSafe1764460801000 } from './1764460801000-poison-safe';
import { BuiltInApprovalRules1764460802170 } from './1764460802170-built-in-approval-rules';
import { Conversations1764460803600 } from './1764460803600-conversations';
import { InboxRewind1764460805000 } from './1764460805000-inbox-rewind';
import { TurnSeq1764460805100 } from './1764460805100-turn-seq';
import { RequestTurn1764460805200 } from './1764460805200-request-turn';
import { KnownToolsPerUser1764460805300 } from './1764460805300-known-tools-per-user';
import { JobRunRefused1764460805340 } from './1764460805340-job-run-refused';
import { TurnSlots1764460805500 } from './1764460805500-turn-slots';
import { InboxQueuedCap1764460805400 } from './1764460805400-inbox-queued-cap';
import { JudgedLanding1764460805600 } from './1764460805600-judged-landing';
import { McpStopped1764460805650 } from './1764460805650-mcp-stopped';
import { PendingWriteKind1764460805700 } from './1764460805700-pending-write-kind';
import { OpenaiConversations1764460805800 } from './1764460805800-openai-conversations';
import { OpenaiRequests1764460805900 } from './1764460805900-openai-requests';
import { Notifications1764460806000 } from './1764460806000-notifications';
import { ApprovalEdits1764460806100 } from './1764460806100-approval-edits';
import { DecisionChannel1764460806200 } from './1764460806200-decision-channel';
import { SealedWebhookSecrets1764460806450 } from './1764460806450-sealed-webhook-secrets';
import { WebPush1764460806650 } from './1764460806650-web-push';
import { RuleNames1764460806700 } from './1764460806700-rule-names';
import { AdminSessionReads1764460806750 } from './1764460806750-admin-session-reads';
import { OidcSignIn1764460806800 } from './1764460806800-oidc-sign-in';
import { Groups1764460806850 } from './1764460806850-groups';
import { UsageReport1764460806900 } from './1764460806900-usage-report';
import { Budgets1764460807000 } from './1764460807000-budgets';
import { LoginSessions1764460807100 } from './1764460807100-login-sessions';

/** Every migration, in order. Never edit one that has landed: add a new one. */
export const MIGRATIONS = [
  InitialSchema1764460800000,
  DefaultApprovalRules1764460800001,
  Approvals1764460800100,
  ToolRunner1764460800200,
  PreviewHash1764460800300,
  RulesVersion1764460800400,
  McpServers1764460800500,
  LlmUsage1764460800600,
  AgentsCatalog1764460800700,
  Scheduler1764460800800,
  WsTicketCredential1764460800900,
  PoisonSafe1764460801000,
  BuiltInApprovalRules1764460802170,
  McpServerTools1764460803000,
  Conversations1764460803600,
  InboxRewind1764460805000,
  TurnSeq1764460805100,
  RequestTurn1764460805200,
  KnownToolsPerUser1764460805300,
  JobRunRefused1764460805340,
  InboxQueuedCap1764460805400,
  TurnSlots1764460805500,
  JudgedLanding1764460805600,
  McpStopped1764460805650,
  PendingWriteKind1764460805700,
  OpenaiConversations1764460805800,
  OpenaiRequests1764460805900,
  Notifications1764460806000,
  ApprovalEdits1764460806100,
  DecisionChannel1764460806200,
  SealedWebhookSecrets1764460806450,
  WebPush1764460806650,
  RuleNames1764460806700,
  AdminSessionReads1764460806750,
  OidcSignIn1764460806800,
  Groups1764460806850,
  UsageReport1764460806900,
  Budgets1764460807000,
  LoginSessions1764460807100,
];
export { DEFAULT_APPROVAL_RULES } from './1764460800001-default-approval-rules';
