export * from './config';
export * from './logger';
export * from './ops';
export * from './bootstrap';
export * from './tracing';
