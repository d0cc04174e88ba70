import { SERVICE } from './instrument';
import 'reflect-metadata';
import { runService } from '@skald/service-kit';
import { AppModule } from './app.module';
import { SchedulerConfigSchema } from './config';

runService({
  service: SERVICE,
  schema: SchedulerConfigSchema,
  module: (config, log, instance) => AppModule.register(config, log, instance),
});
