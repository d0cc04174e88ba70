import { resolve } from 'node:path';
import { z } from 'zod';
import { userCapSetting } from '@skald/contracts';
import { DEFAULT_EXTRACTOR_OPTIONS } from '@skald/documents';
import { BaseConfigSchema, commaList } from '@skald/service-kit/config';
import { DEFAULT_PATTERN_POOL } from './patterns/pattern-pool';
import { DEFAULT_WEB_FETCH_LIMITS } from './web/web-fetcher';
import { SEARCH_BACKENDS } from './web/search/search-backend';
import { DEFAULT_STAGING_SWEEP_MS, DEFAULT_STAGING_TTL_MS } from './uploads/workspace-files.service';
import { DEFAULT_INODE_QUOTA, DEFAULT_SAMPLE_MS, DEFAULT_SYNC_READ_BYTES } from './workspace/workspaces.service';

export const ToolRunnerConfigSchema = BaseConfigSchema.extend({
  PORT: z.coerce.number().int().min(0).max(65535).default(3103),
  HOST: z.string().default('127.0.0.1'),
  /** One directory per user below this root; on Kubernetes a volume shared by every replica. */
  SKALD_WORKSPACES: z
    .string()
    .min(1)
    .default(() => resolve(process.cwd(), '.skald/workspaces'))
    .transform((p) => resolve(p)),
  /** Disk quota per workspace in bytes: the apparent size of its regular files (default 1 GiB). */
  SKALD_WORKSPACE_QUOTA: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 ** 3),
  /**
   * Files, directories and symlinks per workspace (default 100000). Enforced with the byte quota while
   * a command runs (the workspace is sampled every `SKALD_WORKSPACE_SAMPLE_MS`) and before every file-tool write.
   */
  SKALD_WORKSPACE_INODES: z.coerce.number().int().positive().default(DEFAULT_INODE_QUOTA),
  /**
   * How often the workspace of a running command is walked to enforce both quotas, in ms (default
   * 250). A command may overshoot a quota by what it writes in about one interval before it is killed.
   */
  SKALD_WORKSPACE_SAMPLE_MS: z.coerce.number().int().min(20).max(10_000).default(DEFAULT_SAMPLE_MS),
  /**
   * Workspace files up to this many bytes are read by `read_file`/`search_file` with synchronous
   * system calls on the event loop instead of a thread-pool hop per call (default 65536); 0 keeps
   * every file-system call of a tool call off the event loop (a slow network file system).
   */
  SKALD_SYNC_READ_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .max(1024 * 1024)
    .default(DEFAULT_SYNC_READ_BYTES),
  SKALD_MAX_UPLOADS_PER_USER: userCapSetting('uploads'),
  SKALD_MAX_STAGED_BYTES_PER_USER: userCapSetting('staged_bytes'),
  /**
   * A staged upload (chunks received, not yet stored) not written for this long, in ms, is abandoned
   * and removed by the sweep (default 10 minutes).
   */
  SKALD_UPLOAD_STAGING_TTL_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(24 * 3600 * 1000)
    .default(DEFAULT_STAGING_TTL_MS),
  /** How often each tool runner sweeps abandoned staged uploads, in ms (default 60000; bounded per sweep). */
  SKALD_UPLOAD_SWEEP_MS: z.coerce.number().int().min(100).max(3_600_000).default(DEFAULT_STAGING_SWEEP_MS),
  /** `bwrap` (default; fails closed) or `none` (commands run unsandboxed — development only). */
  SKALD_SANDBOX: z.enum(['bwrap', 'none']).default('bwrap'),
  /** `on` lets commands reach the network (the host's loopback stays unreachable only with `off`). */
  SKALD_SANDBOX_NET: z.enum(['on', 'off']).default('off'),
  /** The bubblewrap binary (a name looked up on PATH, or an absolute path). */
  SKALD_SANDBOX_BWRAP: z.string().min(1).default('bwrap'),
  /** Memory of one command's process tree in bytes (memory cgroup; RLIMIT_DATA per process without one). */
  SKALD_SANDBOX_MEMORY: z.coerce
    .number()
    .int()
    .min(16 * 1024 ** 2)
    .default(1024 ** 3),
  /** Processes (and threads) of one command (pids cgroup; without one RLIMIT_NPROC, counted in the sandbox's own user namespace). */
  SKALD_SANDBOX_PIDS: z.coerce.number().int().min(8).max(65536).default(256),
  /** CPU cores one command may use (cpu cgroup CFS quota). */
  SKALD_SANDBOX_CPUS: z.coerce.number().min(0.1).max(256).default(1),
  /** Size of the private /tmp of a command in bytes, and of its /dev/shm (tmpfs each, counted in its memory cgroup). */
  SKALD_SANDBOX_TMP_SIZE: z.coerce
    .number()
    .int()
    .min(1024 ** 2)
    .default(256 * 1024 ** 2),
  /** `auto`: per-call cgroup (v1, or v2 at the root of a writable cgroup namespace) pids/memory/cpu limits when the runner may create them, else per-sandbox rlimits; `off`: per-sandbox rlimits only. */
  SKALD_SANDBOX_CGROUPS: z.enum(['auto', 'off']).default('auto'),
  /**
   * `on` (default): every sandbox loads the checked-in syscall filter of this architecture
   * (`seccomp/<arch>.bpf`; x86_64 and aarch64), and without one the sandbox is unavailable (fail
   * closed); `off` runs sandboxes without a filter, stated on `/readyz`.
   */
  SKALD_SANDBOX_SECCOMP: z.enum(['on', 'off']).default('on'),
  /**
   * `refuse` (default): where neither a pids cgroup (v1, or v2 in a writable cgroup namespace) nor
   * RLIMIT_NPROC bounds a sandbox's process count (a root runner that cannot run sandboxes under
   * tenant uids: root is exempt from it), commands and stdio MCP servers are refused; `allow` runs
   * them with rlimits only (memory per process, CPU seconds, file size), stated on `/readyz`.
   */
  SKALD_SANDBOX_UNBOUNDED: z.enum(['refuse', 'allow']).default('refuse'),
  /**
   * Where no pids cgroup is writable and the runner is root (with CAP_SETUID): each tenant's
   * sandboxes run under a uid (and gid) of its own from `SKALD_SANDBOX_UID_BASE + 1` …
   * `+ SKALD_SANDBOX_UID_COUNT - 1` (the base itself is the self-test's), which owns its workspace;
   * root's processes are exempt from RLIMIT_NPROC. `SKALD_SANDBOX_UID_COUNT=0` turns it off. The
   * defaults fit the 65536 uids of a `hostUsers: false` pod.
   */
  SKALD_SANDBOX_UID_BASE: z.coerce.number().int().min(1).max(4_000_000_000).default(10_000),
  /** How many uids from `SKALD_SANDBOX_UID_BASE` tenants may be given (one each, never reused); `0` turns tenant uids off. */
  SKALD_SANDBOX_UID_COUNT: z.coerce
    .number()
    .int()
    .min(0)
    .max(1_000_000)
    .refine((n) => n !== 1, 'must be 0 (off) or at least 2')
    .default(50_000),
  /** Extra host paths bound read-only into the sandbox at the same place (comma-separated). */
  SKALD_SANDBOX_RO_BINDS: commaList(),
  /**
   * Key sealing MCP credentials at rest (AES-256-GCM): 32 bytes as 64 hex digits or base64. Without
   * it, MCP servers with `env` or `headers` are refused (servers without credentials still work).
   */
  SKALD_SECRETS_KEY: z.string().optional(),
  /** Host names, addresses and CIDR ranges MCP HTTP servers may use although private (comma-separated). */
  SKALD_MCP_ALLOW_HOSTS: commaList(),
  /**
   * `on` lets a stdio MCP server whose configuration says `network: true` reach the network; `off`
   * (default): every stdio server runs without a network, whatever its configuration says.
   */
  SKALD_MCP_NETWORK: z.enum(['on', 'off']).default('off'),
  /** stdio MCP servers running at once on this runner, all users together (a start beyond it is refused). */
  SKALD_MCP_MAX_RUNNING: z.coerce.number().int().min(1).max(10_000).default(50),
  /** stdio MCP servers of one user running at once on this runner (a start beyond it is refused). */
  SKALD_MCP_MAX_RUNNING_PER_USER: z.coerce.number().int().min(1).max(200).default(5),
  /**
   * An MCP connection (a stdio server's process) lives at most this long, busy or not; the next use
   * starts it again. Also the server's CPU seconds (RLIMIT_CPU).
   */
  SKALD_MCP_LIFETIME_SECS: z.coerce
    .number()
    .int()
    .min(1)
    .default(4 * 3600),
  /** Largest MCP message (a tool list page, a result) read from a server; a longer one ends the connection. */
  SKALD_MCP_MAX_MESSAGE_BYTES: z.coerce
    .number()
    .int()
    .min(64 * 1024)
    .default(4 * 1024 ** 2),
  /** Pages of `tools/list` read from one server (a server paging on past them, or repeating a cursor, gets what was read). */
  SKALD_MCP_MAX_TOOL_PAGES: z.coerce.number().int().min(1).max(1000).default(20),
  /** Tools kept per MCP server; the rest of its list is ignored. */
  SKALD_MCP_MAX_TOOLS: z.coerce.number().int().min(1).max(10_000).default(200),
  /** Largest input schema of one MCP tool (JSON bytes); a tool with a larger one is left out. */
  SKALD_MCP_MAX_SCHEMA_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(64 * 1024),
  /** MCP servers one user may configure. */
  SKALD_MCP_MAX_SERVERS: z.coerce.number().int().min(1).max(200).default(20),
  /**
   * Seconds a user's MCP server list is answered from memory at most. Writes drop it on every replica
   * (`mcp.servers.changed.<user>`), a lost NATS connection drops all; the bound is what a doorbell
   * missed otherwise (or an edit in SQL) can cost: the prompt's list out of date. 0 turns it off.
   */
  SKALD_MCP_LIST_CACHE_SECS: z.coerce.number().int().min(0).max(300).default(30),
  /** Users whose MCP server list is kept in memory at once (least recently used first out). */
  SKALD_MCP_LIST_CACHE_USERS: z.coerce.number().int().min(1).max(1_000_000).default(10_000),
  /** An MCP connection unused this long is closed (its stdio server stopped); the next use reconnects. */
  SKALD_MCP_IDLE_SECS: z.coerce.number().int().min(5).default(600),
  /** Connecting to an MCP server (start, handshake, first tool list) may take this long. */
  SKALD_MCP_CONNECT_TIMEOUT_SECS: z.coerce.number().int().min(1).max(300).default(30),
  /** One MCP tool call may take this long (progress notifications extend it). */
  SKALD_MCP_CALL_TIMEOUT_SECS: z.coerce.number().int().min(1).max(3600).default(300),
  /** Documents (PDF, DOCX, XLSX, CSV, PPTX, HTML) whose text is extracted at once, each in a worker thread of its own (default 2). */
  SKALD_DOCUMENT_WORKERS: z.coerce.number().int().min(1).max(64).default(DEFAULT_EXTRACTOR_OPTIONS.workers),
  /** Time one document's text extraction may take, in ms; past it the worker is terminated and the document's text says so (default 60000). */
  SKALD_DOCUMENT_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(DEFAULT_EXTRACTOR_OPTIONS.timeoutMs),
  /** Heap of one document extraction's worker thread, in MiB; past it the worker is stopped (default 512). */
  SKALD_DOCUMENT_MEMORY_MB: z.coerce.number().int().min(64).max(16_384).default(DEFAULT_EXTRACTOR_OPTIONS.memoryMb),
  /** Documents larger than this many bytes get no text rendition (default 50 MiB). */
  SKALD_DOCUMENT_MAX_BYTES: z.coerce.number().int().min(1024).default(DEFAULT_EXTRACTOR_OPTIONS.maxInputBytes),
  /** What a DOCX, XLSX or PPTX may unpack to, all its parts together, in bytes; more is refused as a zip bomb (default 256 MiB). */
  SKALD_DOCUMENT_MAX_UNPACKED_BYTES: z.coerce
    .number()
    .int()
    .min(1024 * 1024)
    .default(DEFAULT_EXTRACTOR_OPTIONS.maxInflatedBytes),
  /** Worker threads that run grep_files' regexes and globs (RE2 semantics, off the event loop). */
  SKALD_PATTERN_WORKERS: z.coerce.number().int().min(1).max(64).default(DEFAULT_PATTERN_POOL.workers),
  /** Deadline of one pattern job (waiting for a worker included); the worker is terminated past it. */
  SKALD_PATTERN_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(DEFAULT_PATTERN_POOL.timeoutMs),
  /** Heap limit of one pattern worker, in MiB. */
  SKALD_PATTERN_MEMORY_MB: z.coerce.number().int().min(32).max(16_384).default(DEFAULT_PATTERN_POOL.memoryMb),
  /** Pattern jobs of one user running at once (the user's other jobs wait). */
  SKALD_PATTERN_PER_USER: z.coerce.number().int().min(1).max(64).default(DEFAULT_PATTERN_POOL.perUser),
  /**
   * Host names, addresses and CIDR ranges `web_fetch` may reach although they are loopback, private or
   * link-local (comma-separated; default none: the tool reaches the public web only).
   */
  SKALD_WEB_ALLOW_HOSTS: commaList(),
  /** Bytes of one `web_fetch` body read, after decompression (default 5 MiB): a longer page is cut there, a longer PDF refused. */
  SKALD_WEB_FETCH_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(64 * 1024)
    .max(100 * 1024 ** 2)
    .default(DEFAULT_WEB_FETCH_LIMITS.maxBytes),
  /** One `web_fetch` or `web_search` call — redirects, body and conversion — may take this long, in ms (default 30000). */
  SKALD_WEB_FETCH_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(300_000)
    .default(DEFAULT_WEB_FETCH_LIMITS.timeoutMs),
  /** Redirects `web_fetch` follows within the URL's host (default 5); a redirect to another host is never followed. */
  SKALD_WEB_FETCH_MAX_REDIRECTS: z.coerce.number().int().min(0).max(20).default(DEFAULT_WEB_FETCH_LIMITS.maxRedirects),
  /** Characters of text `web_fetch` returns unless the call asks for up to 100000 (`max_chars`; default 20000). */
  SKALD_WEB_FETCH_CHARS: z.coerce.number().int().min(1_000).max(100_000).default(DEFAULT_WEB_FETCH_LIMITS.defaultChars),
  /** Pages of a fetched PDF whose text is read (default 200); the rest are counted and named in the result. */
  SKALD_WEB_PDF_MAX_PAGES: z.coerce.number().int().min(1).max(10_000).default(DEFAULT_WEB_FETCH_LIMITS.pdfMaxPages),
  /**
   * The API `web_search` uses: `searxng` (an instance's JSON API at `SKALD_WEB_SEARCH_URL`), `brave`
   * (Brave Search API) or `tavily` (Tavily); `none` (default): `web_search` is not offered.
   */
  SKALD_WEB_SEARCH_BACKEND: z.enum(SEARCH_BACKENDS).default('none'),
  /** The search backend's endpoint: required for `searxng` (its base URL); for `brave` and `tavily` it replaces their public API's URL. */
  SKALD_WEB_SEARCH_URL: z.url({ protocol: /^https?$/ }).optional(),
  /** **Secret.** The search backend's API key (`brave`, `tavily`); never logged, never shown to the model. */
  SKALD_WEB_SEARCH_API_KEY: z.string().min(1).optional(),
  /** Days finished tool results are kept for duplicate calls (0 keeps them forever). */
  SKALD_TOOL_RESULT_RETENTION_DAYS: z.coerce.number().int().min(0).default(7),
}).superRefine((c, ctx) => {
  if (c.SKALD_WEB_SEARCH_BACKEND === 'searxng' && !c.SKALD_WEB_SEARCH_URL)
    ctx.addIssue({ code: 'custom', path: ['SKALD_WEB_SEARCH_URL'], message: 'the searxng backend needs its base URL' });
  if (
    (c.SKALD_WEB_SEARCH_BACKEND === 'brave' || c.SKALD_WEB_SEARCH_BACKEND === 'tavily') &&
    !c.SKALD_WEB_SEARCH_API_KEY
  )
    ctx.addIssue({
      code: 'custom',
      path: ['SKALD_WEB_SEARCH_API_KEY'],
      message: `the ${c.SKALD_WEB_SEARCH_BACKEND} backend needs an API key`,
    });
});
export type ToolRunnerConfig = z.infer<typeof ToolRunnerConfigSchema>;

/** Injection tokens for the values main.ts creates before Nest. */
export const TOOL_RUNNER_CONFIG = Symbol('TOOL_RUNNER_CONFIG');
export const LOGGER = Symbol('LOGGER');
