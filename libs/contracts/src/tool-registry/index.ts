export * from './define-tool';
export * from './registry';
export * from './tool-patterns';
export { RE2_SYNTAX_NOTE, PATTERN_MAX_CHARS, GLOB_MAX_CHARS } from './grep-files.tool';
