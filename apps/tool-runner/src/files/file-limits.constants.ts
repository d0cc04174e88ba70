/** Size limits of the file tools. */
export const FILE_LIMITS = {
  /** read_file / search_file refuse larger files. */
  readMaxBytes: 10 * 1024 * 1024,
  /** Edit tools refuse to rewrite larger files. */
  editMaxBytes: 10 * 1024 * 1024,
  /** Lines read_file returns when no range is given. */
  readDefaultLines: 2000,
  /** Characters of tool output (read_file, list_files, grep_files, search_file). */
  outputMaxChars: 100_000,
  /** Entries list_files shows. */
  listMaxEntries: 1000,
  /** Matches search_file shows. */
  searchMaxMatches: 100,
  /** grep_files skips larger files, and stops reading after this many bytes in total / files. */
  grepMaxFileBytes: 10 * 1024 * 1024,
  grepMaxTotalBytes: 64 * 1024 * 1024,
  grepMaxFiles: 20_000,
  /** grep_files looks at this many files below the path at most (before the glob). */
  grepMaxCandidates: 200_000,
  /** delete_file removes at most this many entries a call (a larger tree: call it again). */
  deleteMaxEntries: 20_000,
} as const;

/**
 * Directories that walks (list_files below the top level, grep_files) do not descend into; `.skald-text`
 * holds documents' text renditions (read_file of the document reads them).
 */
export const NOT_EXPANDED = new Set(['.git', 'node_modules', '.skald-text']);
