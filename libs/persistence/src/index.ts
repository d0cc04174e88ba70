export * from './data-source';
export * from './migrations';
export * from './database.module';
export * from './query-rows';
export * from './generated/rows';
export * from './service-roles';
export * from './pg-text';
export * from './backup';
