export * from './common';
export * from './ws';
export * from './rest';
export * from './subjects';
export * from './approvals';
export * from './tools';
export * from './tool-runner';
export * from './agents';
