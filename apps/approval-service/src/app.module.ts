import { DynamicModule, Module } from '@nestjs/common';
import { MessagingModule } from '@skald/messaging';
import { APPROVAL_ENTITIES, DatabaseModule } from '@skald/persistence';
import { Logger, OpsModule, Readiness } from '@skald/service-kit';
import { CheckHandler } from './check/check.handler';
import { ApprovalConfig } from './config';
import { RulesRepository } from './rules/rules.repository';
import { RulesService } from './rules/rules.service';

@Module({})
export class AppModule {
  static register(config: ApprovalConfig, log: Logger, instance: string): DynamicModule {
    const readiness = new Readiness();
    return {
      module: AppModule,
      imports: [
        OpsModule.forRoot({ service: 'approval-service', readiness }),
        DatabaseModule.forRoot({
          url: config.DATABASE_URL,
          poolSize: config.DATABASE_POOL_SIZE,
          entities: APPROVAL_ENTITIES,
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
      providers: [RulesRepository, RulesService, CheckHandler],
    };
  }
}
