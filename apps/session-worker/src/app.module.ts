import { DynamicModule, Module, OnApplicationShutdown } from '@nestjs/common';
import { LlmManager } from '@skald/llm';
import { Bus, MessagingModule } from '@skald/messaging';
import { DatabaseModule } from '@skald/persistence';
import type { Logger } from '@skald/service-kit';
import { metricsAccessOf } from '@skald/service-kit/metrics-access';
import { OpsModule, Readiness } from '@skald/service-kit/ops';
import { WORKER_CONFIG, WORKER_INSTANCE, WORKER_LOGGER, WorkerConfig } from './config';
import { AGENT_FILES, AgentCatalogService } from './agents/agent-catalog.service';
import { defaultAgentsDir, loadAgentFiles } from './agents/agent-files';
import { AgentsHandler } from './agents/agents.handler';
import { BudgetsHandler } from './budgets/budgets.handler';
import { BudgetsRepository } from './budgets/budgets.repository';
import { BudgetsService } from './budgets/budgets.service';
import { GroupsHandler } from './groups/groups.handler';
import { GroupPolicyRepository } from './groups/group-policy.repository';
import { GroupPolicyService } from './groups/group-policy.service';
import { GroupsRepository } from './groups/groups.repository';
import { GroupsService } from './groups/groups.service';
import { MCP_DIRECTORY, NatsMcpDirectory } from './agents/mcp-directory';
import { UserAgentsRepository } from './agents/user-agents.repository';
import { CommandsHandler } from './commands/commands.handler';
import { SessionCommandsService } from './commands/session-commands.service';
import { LeaseRepository } from './lease/lease.repository';
import { LlmHandler } from './llm/llm.handler';
import { UsageHandler } from './usage/usage.handler';
import { UsageReportRepository } from './usage/usage-report.repository';
import { UsageReportService } from './usage/usage-report.service';
import { LlmService } from './llm/llm.service';
import { LlmUsageRepository } from './llm/llm-usage.repository';
import { UserSettingsRepository } from './settings/user-settings.repository';
import { SessionsHandler } from './sessions/sessions.handler';
import { RunContextHandler } from './sessions/run-context.handler';
import { RunContextRepository } from './sessions/run-context.repository';
import { CallContextRepository } from './sessions/call-context.repository';
import { JobSessionsHandler } from './jobs/job-sessions.handler';
import { JobSessionsRepository } from './jobs/job-sessions.repository';
import { JobSessionsService } from './jobs/job-sessions.service';
import { DeliveryRouting } from './jobs/delivery-routing.service';
import { SessionsRepository, USER_LIMITS, UserLimits } from './sessions/sessions.repository';
import { SessionsService } from './sessions/sessions.service';
import { InboxRepository } from './submit/inbox.repository';
import { SubmitService } from './submit/submit.service';
import { EventAnnouncer } from './turns/event-announcer';
import { ResumeKick } from './turns/resume-kick';
import { Sweeper } from './turns/sweeper';
import { TurnDriver } from './turns/turn-driver';
import { TurnMetrics } from './turns/turn-metrics';
import { TurnStateRepository } from './sessions/turn-state.repository';
import { ConversationsRepository } from './sessions/conversations.repository';
import { ConversationsService } from './sessions/conversations.service';
import { ConversationTitlesService } from './sessions/conversation-titles.service';
import { ConversationsHandler } from './sessions/conversations.handler';
import { RewindService } from './submit/rewind.service';

/** Closes what main() opened for the LLM manager (the shared health store's Redis connection). */
class LlmResources implements OnApplicationShutdown {
  constructor(private readonly close: () => Promise<void>) {}
  onApplicationShutdown(): Promise<void> {
    return this.close();
  }
}

@Module({})
export class AppModule {
  static register(
    config: WorkerConfig,
    log: Logger,
    instance: string,
    llm: LlmManager,
    closeLlm: () => Promise<void> = () => Promise.resolve(),
  ): DynamicModule {
    const readiness = new Readiness();
    return {
      module: AppModule,
      imports: [
        OpsModule.forRoot({ service: 'session-worker', readiness, metrics: metricsAccessOf(config) }),
        DatabaseModule.forRoot({
          url: config.DATABASE_URL,
          poolSize: config.DATABASE_POOL_SIZE,
          poolMin: config.DATABASE_POOL_MIN,
          poolIdleMs: config.DATABASE_POOL_IDLE_MS,
          applicationName: instance,
          readiness,
        }),
        MessagingModule.forRoot({
          servers: config.NATS_URL,
          name: instance,
          user: config.NATS_USER,
          pass: config.NATS_PASSWORD,
          requestTimeoutMs: config.NATS_REQUEST_TIMEOUT_MS,
          noResponderRetryMs: config.SKALD_NO_RESPONDER_RETRY_MS,
          logger: log,
          readiness,
        }),
      ],
      providers: [
        { provide: WORKER_CONFIG, useValue: config },
        { provide: WORKER_LOGGER, useValue: log },
        { provide: WORKER_INSTANCE, useValue: instance },
        {
          provide: USER_LIMITS,
          useValue: {
            sessions: config.SKALD_MAX_SESSIONS_PER_USER,
            queuedMessages: config.SKALD_MAX_QUEUED_MESSAGES_PER_USER,
            concurrentTurns: config.SKALD_MAX_CONCURRENT_TURNS_PER_USER,
          } satisfies UserLimits,
        },
        { provide: LlmManager, useValue: llm },
        { provide: LlmResources, useFactory: () => new LlmResources(closeLlm) },
        LlmUsageRepository,
        LlmService,
        LlmHandler,
        UsageReportRepository,
        UsageReportService,
        UsageHandler,
        { provide: AGENT_FILES, useValue: loadAgentFiles(defaultAgentsDir(config.SKALD_AGENTS_DIR)) },
        { provide: MCP_DIRECTORY, useFactory: (bus: Bus) => new NatsMcpDirectory(bus), inject: [Bus] },
        UserAgentsRepository,
        AgentCatalogService,
        AgentsHandler,
        GroupsRepository,
        GroupPolicyRepository,
        GroupPolicyService,
        GroupsService,
        GroupsHandler,
        BudgetsRepository,
        BudgetsService,
        BudgetsHandler,
        UserSettingsRepository,
        SessionCommandsService,
        CommandsHandler,
        LeaseRepository,
        TurnStateRepository,
        TurnMetrics,
        SessionsRepository,
        InboxRepository,
        SessionsService,
        SubmitService,
        EventAnnouncer,
        TurnDriver,
        SessionsHandler,
        ConversationsRepository,
        ConversationsService,
        ConversationTitlesService,
        RewindService,
        ConversationsHandler,
        RunContextRepository,
        CallContextRepository,
        RunContextHandler,
        JobSessionsRepository,
        JobSessionsService,
        DeliveryRouting,
        JobSessionsHandler,
        Sweeper,
        ResumeKick,
      ],
    };
  }
}
