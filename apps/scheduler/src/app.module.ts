import { DynamicModule, Module } from '@nestjs/common';
import { MessagingModule } from '@skald/messaging';
import { DatabaseModule } from '@skald/persistence';
import type { Logger } from '@skald/service-kit';
import { metricsAccessOf } from '@skald/service-kit/metrics-access';
import { OpsModule, Readiness } from '@skald/service-kit/ops';
import { SchedulerConfig } from './config';
import { SCHEDULER_CONFIG, SCHEDULER_INSTANCE, SCHEDULER_LOGGER, SchedulerRuntime } from './jobs/scheduler-runtime';
import { RedisConnection } from './redis.provider';

@Module({})
export class AppModule {
  static register(config: SchedulerConfig, log: Logger, instance: string): DynamicModule {
    const readiness = new Readiness();
    const redis = new RedisConnection(config.REDIS_URL);
    readiness.register('redis', () => redis.ping());
    return {
      module: AppModule,
      imports: [
        OpsModule.forRoot({ service: 'scheduler', readiness, metrics: metricsAccessOf(config) }),
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
        { provide: RedisConnection, useValue: redis },
        { provide: SCHEDULER_CONFIG, useValue: config },
        { provide: SCHEDULER_LOGGER, useValue: log },
        { provide: SCHEDULER_INSTANCE, useValue: instance },
        SchedulerRuntime,
      ],
    };
  }
}
