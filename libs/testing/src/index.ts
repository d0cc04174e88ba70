export * from './llm-sim';
export * from './stack';
