export * from './data-source';
export * from './migrations';
export * from './entities/identity.entity';
export * from './entities/session.entity';
export * from './entities/approval.entity';
export * from './entities/tool-runner.entity';
export * from './database.module';
export * from './query-rows';
