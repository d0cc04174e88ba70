export * from './define-tool';
export * from './registry';
export { RE2_SYNTAX_NOTE, PATTERN_MAX_CHARS, GLOB_MAX_CHARS } from './grep-files.tool';
