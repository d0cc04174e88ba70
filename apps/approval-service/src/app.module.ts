import { DynamicModule, Module } from '@nestjs/common';
import { MessagingModule } from '@skald/messaging';
import { DatabaseModule } from '@skald/persistence';
import type { Logger } from '@skald/service-kit';
import { metricsAccessOf } from '@skald/service-kit/metrics-access';
import { OpsModule, Readiness } from '@skald/service-kit/ops';
import { ActionTokensRepository } from './action-tokens/action-tokens.repository';
import { ActionTokensService } from './action-tokens/action-tokens.service';
import { AdminHandler } from './admin.handler';
import { AuditRepository } from './audit/audit.repository';
import { AUDIT_FLUSH_MS, AuditService } from './audit/audit.service';
import { BypassesRepository } from './bypasses/bypasses.repository';
import { BypassesService } from './bypasses/bypasses.service';
import { CatalogService } from './catalog/catalog.service';
import { KnownToolsRepository } from './catalog/known-tools.repository';
import { APPROVAL_LOGGER, ApprovalConfig, RULES_MAX_AGE_MS, SESSION_APPROVAL_SECS } from './config';
import { ApprovalEventsPublisher } from './events/approval-events.publisher';
import { GateHandler } from './gate/gate.handler';
import { ApprovalMetrics } from './approval-metrics';
import { GateService } from './gate/gate.service';
import { RequestsHandler } from './requests/requests.handler';
import { RequestsRepository } from './requests/requests.repository';
import { RequestsService } from './requests/requests.service';
import { RulesRepository } from './rules/rules.repository';
import { RulesService } from './rules/rules.service';

@Module({})
export class AppModule {
  static register(config: ApprovalConfig, log: Logger, instance: string): DynamicModule {
    const readiness = new Readiness();
    return {
      module: AppModule,
      imports: [
        OpsModule.forRoot({ service: 'approval-service', readiness, metrics: metricsAccessOf(config) }),
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
      providers: [
        { provide: AUDIT_FLUSH_MS, useValue: config.SKALD_AUDIT_FLUSH_MS },
        { provide: APPROVAL_LOGGER, useValue: log },
        { provide: SESSION_APPROVAL_SECS, useValue: config.SKALD_SESSION_APPROVAL_SECS },
        { provide: RULES_MAX_AGE_MS, useValue: config.SKALD_RULES_MAX_AGE_MS },
        ApprovalEventsPublisher,
        RulesRepository,
        RulesService,
        BypassesRepository,
        BypassesService,
        AuditRepository,
        AuditService,
        KnownToolsRepository,
        CatalogService,
        RequestsRepository,
        ApprovalMetrics,
        RequestsService,
        ActionTokensRepository,
        ActionTokensService,
        GateService,
        GateHandler,
        RequestsHandler,
        AdminHandler,
      ],
    };
  }
}
