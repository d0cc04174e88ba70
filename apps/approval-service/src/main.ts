import { SERVICE } from './instrument';
import 'reflect-metadata';
import { runService } from '@skald/service-kit';
import { AppModule } from './app.module';
import { ApprovalConfigSchema } from './config';

runService({
  service: SERVICE,
  schema: ApprovalConfigSchema,
  module: (config, log, instance) => AppModule.register(config, log, instance),
});
