export * from './llm-sim';
export * from './stack';
export * from './attack-suite-report';
