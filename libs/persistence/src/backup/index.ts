export * from './backup';
export * from './manifest';
export * from './sealed-secrets';
