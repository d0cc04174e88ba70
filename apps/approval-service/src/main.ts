import { SERVICE } from './instrument';
import 'reflect-metadata';
import { Bus } from '@skald/messaging/bus-port';
import { runService } from '@skald/service-kit';
import { AppModule } from './app.module';
import { ApprovalConfigSchema } from './config';

runService({
  service: SERVICE,
  schema: ApprovalConfigSchema,
  module: (config, log, instance) => AppModule.register(config, log, instance),
  // New requests go to another replica (or wait for this one's restart: the worker retries a
  // request nobody answers); the checks taken are answered before the database closes.
  drain: async (app, config) => {
    const bus = app.get(Bus);
    await bus.stopAnswering();
    await bus.settled(Math.max(0, config.SKALD_SHUTDOWN_GRACE_MS - 1_000));
  },
});
