import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { MessagingModule } from '@skald/messaging';
import { DatabaseModule } from '@skald/persistence';
import type { Logger } from '@skald/service-kit';
import { METRICS_REGISTRY, OpsModule, Readiness } from '@skald/service-kit/ops';
import { metricsAccessOf } from '@skald/service-kit/metrics-access';
import type { Registry } from 'prom-client';
import { AdminSessionReadsRepository } from './admin/admin-session-reads.repository';
import { AdminSessionsController } from './admin/admin-sessions.controller';
import { AdminSessionsService } from './admin/admin-sessions.service';
import { AdminUsersController } from './admin/admin-users.controller';
import { UsageController } from './usage/usage.controller';
import { UsageService } from './usage/usage.service';
import { BudgetsController } from './budgets/budgets.controller';
import { BudgetsService } from './budgets/budgets.service';
import { GroupsController } from './groups/groups.controller';
import { GroupsService } from './groups/groups.service';
import { AgentsController } from './agents/agents.controller';
import { ApprovalConsoleController } from './approvals/approval-console.controller';
import { ActionThrottle } from './approvals/action-throttle';
import { ApprovalActionsController } from './approvals/approval-actions.controller';
import { ApprovalsController } from './approvals/approvals.controller';
import { ApprovalsGateway } from './approvals/approvals.gateway';
import { AuthController } from './auth/auth.controller';
import { AuthGuard } from './auth/auth.guard';
import { AuthService } from './auth/auth.service';
import { LoginSessionsRepository } from './auth/login-sessions.repository';
import { OidcController } from './auth/oidc/oidc.controller';
import { OidcRepository } from './auth/oidc/oidc.repository';
import { OidcService } from './auth/oidc/oidc.service';
import { UserStandingHandler } from './auth/user-standing.handler';
import { LoginThrottle } from './auth/login-throttle';
import { PasswordHasher } from './auth/password-hasher';
import { UsersRepository } from './auth/users.repository';
import { GATEWAY_CONFIG, GatewayConfig } from './config';
import { WorkspaceFilesClient } from './files/workspace-files.client';
import { WorkspaceFilesController } from './files/workspace-files.controller';
import { ErrorFilter } from './http/error.filter';
import { DocsController } from './http/docs.controller';
import { OpenApiController } from './http/openapi.controller';
import { McpController } from './mcp/mcp.controller';
import { ChatCompletionsService } from './openai/chat-completions.service';
import { OpenAiConversationsRepository } from './openai/conversations.repository';
import { OpenAiRequestsRepository } from './openai/requests.repository';
import { OpenAiController } from './openai/openai.controller';
import { WebController } from './web/web.controller';
import { CronController } from './cron/cron.controller';
import { NotificationsController } from './notifications/notifications.controller';
import { TicController } from './cron/tic.controller';
import { LlmController } from './llm/llm.controller';
import { LlmGateway } from './llm/llm.gateway';
import { RunContextController } from './sessions/run-context.controller';
import { SessionsController } from './sessions/sessions.controller';
import { SessionsGateway } from './sessions/sessions.gateway';
import { GATEWAY_LOGGER } from './tokens';
import { GatewayMetrics } from './ws/gateway-metrics';
import { SocketCap } from './ws/socket-cap';
import { WsServer } from './ws/ws.server';
import { adminMetricsBearer } from './http/metrics-guard';

@Module({})
export class AppModule {
  static register(config: GatewayConfig, log: Logger, instance: string): DynamicModule {
    const readiness = new Readiness();
    const admins = adminMetricsBearer();
    return {
      module: AppModule,
      imports: [
        OpsModule.forRoot({
          service: 'gateway',
          readiness,
          metrics: { ...metricsAccessOf(config), alsoAccept: (bearer) => admins.accepts(bearer) },
        }),
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
          logger: log,
          readiness,
        }),
      ],
      controllers: [
        AuthController,
        OidcController,
        AdminUsersController,
        GroupsController,
        BudgetsController,
        AdminSessionsController,
        UsageController,
        SessionsController,
        ApprovalsController,
        ApprovalActionsController,
        ApprovalConsoleController,
        McpController,
        WebController,
        CronController,
        NotificationsController,
        TicController,
        OpenApiController,
        DocsController,
        LlmController,
        AgentsController,
        WorkspaceFilesController,
        RunContextController,
        OpenAiController,
      ],
      providers: [
        { provide: GATEWAY_CONFIG, useValue: config },
        { provide: GATEWAY_LOGGER, useValue: log },
        { provide: APP_GUARD, useClass: AuthGuard },
        { provide: APP_FILTER, useFactory: () => new ErrorFilter(log) },
        UsersRepository,
        LoginSessionsRepository,
        OidcRepository,
        OidcService,
        AdminSessionReadsRepository,
        GroupsService,
        BudgetsService,
        AdminSessionsService,
        UsageService,
        LoginThrottle,
        ActionThrottle,
        {
          provide: PasswordHasher,
          useFactory: (registry: Registry) =>
            new PasswordHasher({
              maxConcurrent: config.SKALD_LOGIN_MAX_CONCURRENT_HASHES,
              queue: config.SKALD_LOGIN_HASH_QUEUE,
              registry,
            }),
          inject: [METRICS_REGISTRY],
        },
        AuthService,
        UserStandingHandler,
        SessionsGateway,
        OpenAiConversationsRepository,
        OpenAiRequestsRepository,
        ChatCompletionsService,
        ApprovalsGateway,
        LlmGateway,
        GatewayMetrics,
        WorkspaceFilesClient,
        SocketCap,
        WsServer,
        {
          provide: 'METRICS_GUARD_BINDER',
          useFactory: (auth: AuthService) => admins.bind(auth),
          inject: [AuthService],
        },
      ],
    };
  }
}
