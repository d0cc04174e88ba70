import { z } from 'zod';
import { Actor, Id, StoredText } from './common';

/** An MCP server's name, the middle of `mcp__<server>__<tool>`. */
export const McpServerName = z
  .string()
  .regex(/^[a-z0-9_-]{1,24}$/, 'must be 1–24 characters of a-z, 0-9, _ and -')
  .refine(
    (s) => !s.includes('__') && !s.startsWith('_') && !s.endsWith('_'),
    'must not contain "__" nor start or end with "_" (it separates the parts of a tool name)',
  );

const EnvKey = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be an environment variable name');

/**
 * What glibc removes from the environment of a setuid program (`UNSECURE_ENVVARS`,
 * sysdeps/generic/unsecvars.h): names that make the dynamic loader or libc load code or files of
 * the caller's choosing (its `MALLOC_*` names are refused by prefix).
 */
const GLIBC_UNSECURE = [
  'GCONV_PATH',
  'GETCONF_DIR',
  'GLIBC_TUNABLES',
  'HOSTALIASES',
  'LOCALDOMAIN',
  'LOCPATH',
  'NIS_PATH',
  'NLSPATH',
  'RESOLV_HOST_CONF',
  'RES_OPTIONS',
  'TMPDIR',
  'TZDIR',
];
/** Startup hooks of the shells and interpreters on the runner's image: code run before the program's own. */
const INTERPRETER_HOOKS = [
  'BASH_ENV',
  'ENV',
  'SHELLOPTS',
  'BASHOPTS',
  'PS4',
  'PROMPT_COMMAND',
  'IFS',
  'CDPATH',
  'NODE_OPTIONS',
  'NODE_PATH',
  'NODE_REPL_EXTERNAL_MODULE',
  'PERLLIB',
  'RUBYOPT',
  'RUBYLIB',
  'JAVA_TOOL_OPTIONS',
  '_JAVA_OPTIONS',
  'JDK_JAVA_OPTIONS',
];
/** Name prefixes of the same kinds: the loader's `LD_*`, exported bash functions, Python's and Perl's switches. */
const REFUSED_PREFIXES = ['LD_', 'BASH_FUNC_', 'PYTHON', 'PERL5', 'MALLOC_'];
/** Set by the sandbox itself for every program in it. */
const SANDBOX_NAMES = ['PATH', 'HOME', 'USER', 'LANG', 'TERM'];

/**
 * Why an MCP server may not be configured with this environment variable, or null when it may: the
 * names the dynamic loader, libc or an interpreter act on before the program's own code runs
 * (compared case-insensitively: `ld_preload` is refused too), and the names the sandbox sets.
 */
export function refusedEnvName(name: string): string | null {
  const upper = name.toUpperCase();
  if (SANDBOX_NAMES.includes(upper)) return `${name} is set by the sandbox and cannot be configured`;
  if (
    GLIBC_UNSECURE.includes(upper) ||
    INTERPRETER_HOOKS.includes(upper) ||
    REFUSED_PREFIXES.some((p) => upper.startsWith(p))
  )
    return `${name} is refused: the dynamic loader, libc or an interpreter acts on it before the program runs`;
  return null;
}
const HeaderKey = z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/, 'must be an HTTP header name');
const SecretValue = StoredText(8192);

/**
 * How an MCP server is reached: `stdio`, a command the runner starts in the user's sandbox; `http`,
 * a streamable HTTP endpoint. Every layer switches on it exhaustively (a new transport does not
 * compile until each one handles it).
 */
export const MCP_TRANSPORTS = ['stdio', 'http'] as const;
export const McpTransport = z.enum(MCP_TRANSPORTS);
export type McpTransport = z.infer<typeof McpTransport>;

/**
 * A switch over the transports ends here: a transport no case handled does not compile. Takes the
 * transport or the configuration it was read from (never printed: it may hold credentials).
 */
export function unknownTransport(value: never): never {
  const transport: unknown =
    typeof value === 'object' && value !== null ? (value as { transport?: unknown }).transport : value;
  throw new Error(`unknown MCP transport ${String(transport)}`);
}

/** What a server runs and how it is reached: the fields of a creation and of a patch. */
const McpServerFields = z.object({
  command: StoredText(4096).min(1).optional(),
  args: z.array(StoredText(4096)).max(64).optional(),
  env: z.record(EnvKey, SecretValue).optional(),
  network: z.boolean().optional(),
  url: z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .optional(),
  headers: z.record(HeaderKey, SecretValue).optional(),
});

/** The checks of those fields that do not depend on the transport (env names, counts, NUL bytes). */
function checkServerFields(s: z.infer<typeof McpServerFields>, ctx: z.RefinementCtx): void {
  const refuse = (path: Array<string>, message: string) => ctx.addIssue({ code: 'custom', path, message });
  if (s.env && Object.keys(s.env).length > 64) refuse(['env'], 'at most 64 variables');
  for (const name of Object.keys(s.env ?? {})) {
    const why = refusedEnvName(name);
    if (why) refuse(['env', name], why);
  }
  for (const [field, words] of [
    ['command', [s.command ?? '']],
    ['args', s.args ?? []],
    ['env', Object.values(s.env ?? {})],
  ] as const)
    if (words.some((w) => w.includes('\0'))) refuse([field], 'must not contain a NUL byte');
  if (s.headers && Object.keys(s.headers).length > 64) refuse(['headers'], 'at most 64 headers');
}

/** `POST /api/mcp/servers`: `env` and `headers` values are credentials, write-only. */
export const McpServerInput = McpServerFields.extend({
  name: McpServerName,
  transport: McpTransport,
})
  .strict()
  .superRefine((s, ctx) => {
    const misplaced = (field: string, why: string) => ctx.addIssue({ code: 'custom', path: [field], message: why });
    switch (s.transport) {
      case 'stdio':
        if (!s.command) misplaced('command', 'a stdio server needs a command');
        break;
      case 'http':
        if (!s.url) misplaced('url', 'an http server needs a url');
        break;
      default:
        unknownTransport(s.transport);
    }
    for (const other of MCP_TRANSPORTS)
      if (other !== s.transport)
        for (const f of MCP_TRANSPORT_FIELDS[other])
          if (s[f] !== undefined) misplaced(f, `only ${MCP_TRANSPORT_NOUN[other]} server has this field`);
    checkServerFields(s, ctx);
  });
export type McpServerInput = z.infer<typeof McpServerInput>;

type ServerFields = z.infer<typeof McpServerFields>;
/**
 * A server's configuration by transport, its credentials open: a stdio server's command, arguments,
 * environment and whether its sandbox has a network; an http server's URL and headers.
 */
export type McpServerConfig = {
  [T in McpTransport]: { transport: T } & Required<Pick<ServerFields, (typeof MCP_TRANSPORT_FIELDS)[T][number]>>;
}[McpTransport];

/** The configuration of one transport's servers, without the tag: what its connection is made from. */
export type McpConfigFields<T extends McpTransport> = Omit<Extract<McpServerConfig, { transport: T }>, 'transport'>;

/**
 * Ends the destructuring of a configuration where its fields are applied: the fields not taken are
 * `rest`, which must be empty, so a field added to a transport does not compile until it is used.
 */
export function everyFieldApplied(rest: Record<string, never>): void {
  void rest;
}

/** The configuration a checked creation describes (`McpServerInput` has refused one that mixes transports). */
export function mcpServerConfig(input: McpServerInput): McpServerConfig {
  switch (input.transport) {
    case 'stdio':
      return {
        transport: 'stdio',
        command: input.command ?? '',
        args: input.args ?? [],
        env: input.env ?? {},
        network: input.network ?? false,
      };
    case 'http':
      return { transport: 'http', url: input.url ?? '', headers: input.headers ?? {} };
    default:
      return unknownTransport(input.transport);
  }
}

/**
 * `PATCH /api/mcp/servers/{name}`: the fields to change of one of the caller's servers, each
 * validated as on creation (and against the server's transport by the tool runner); `env` /
 * `headers` replace all of that kind. `enabled: false` stops it everywhere and takes its tools
 * away; a change of what runs (command, args, env, network, url, headers) stops the running
 * process and forgets its tool list (status `stopped` until it runs again). The name and transport
 * are the server's identity: not editable (delete and add).
 */
export const McpServerPatch = McpServerFields.extend({ enabled: z.boolean().optional() })
  .strict()
  .superRefine((s, ctx) => {
    if (Object.keys(s).length === 0) ctx.addIssue({ code: 'custom', message: 'nothing to change: name a field' });
    checkServerFields(s, ctx);
  });
export type McpServerPatch = z.infer<typeof McpServerPatch>;
/** The fields of each transport's servers (a patch may name only its server's). */
export const MCP_TRANSPORT_FIELDS = {
  stdio: ['command', 'args', 'env', 'network'],
  http: ['url', 'headers'],
} as const satisfies { [T in McpTransport]: ReadonlyArray<keyof ServerFields> };
// Every field belongs to exactly one transport: a new field no transport names does not compile.
export const MCP_TRANSPORT_FIELDS_COMPLETE: Exclude<
  keyof ServerFields,
  (typeof MCP_TRANSPORT_FIELDS)[McpTransport][number]
> extends never
  ? true
  : never = true;
/** The transport whose servers have a field, said in a sentence ("only an http server has this field"). */
export const MCP_TRANSPORT_NOUN: { readonly [T in McpTransport]: string } = { stdio: 'a stdio', http: 'an http' };

/** `stopped`: registered or changed and not started since (a stdio server runs only for an approved call). */
export const McpServerStatus = z.enum(['stopped', 'starting', 'ready', 'error', 'disabled']);
export type McpServerStatus = z.infer<typeof McpServerStatus>;
const McpServerDtoCommon = z.object({
  name: z.string(),
  enabled: z.boolean(),
  status: McpServerStatus,
  error: z.string().optional(),
  tools_count: z.number().int().nonnegative(),
});
/** One of the caller's servers as listed: what it runs or where it is, and its credentials by key only. */
export const McpServerDto = z.discriminatedUnion('transport', [
  McpServerDtoCommon.extend({
    transport: z.literal('stdio'),
    command: z.string(),
    args: z.array(z.string()),
    network: z.boolean(),
    env_keys: z.array(z.string()),
  }),
  McpServerDtoCommon.extend({
    transport: z.literal('http'),
    url: z.string(),
    header_keys: z.array(z.string()),
  }),
]);
export type McpServerDto = z.infer<typeof McpServerDto>;
// The list above names every transport: a transport without its DTO does not compile.
export const MCP_DTO_TRANSPORTS_COMPLETE: Exclude<McpTransport, McpServerDto['transport']> extends never
  ? true
  : never = true;
export const McpServerList = z.object({ items: z.array(McpServerDto) });

export const McpServersListRequest = z.object({ actor: Actor });
export const McpServersCreateRequest = z.object({ actor: Actor, server: McpServerInput });
export const McpServersDeleteRequest = z.object({ actor: Actor, name: StoredText(64) });
export const McpServersUpdateRequest = z.object({ actor: Actor, name: StoredText(64), patch: McpServerPatch });
export const McpServersDeleteReply = z.object({ deleted: z.literal(true) });

/** One MCP tool as the model is offered it, with what the restart logic needs to know. */
export const McpToolDef = z.object({
  name: z.string(),
  server: z.string(),
  description: z.string(),
  parameters: z.record(z.string(), z.unknown()),
  read_only: z.boolean(),
  idempotent: z.boolean(),
});
export type McpToolDef = z.infer<typeof McpToolDef>;

/**
 * The session worker's question each round: which groups `activate_tools` may grant (the user's
 * enabled servers), the tools of the granted ones, and the built-in tools the runner cannot run
 * for want of configuration (`web_search` without a search backend): those are not offered.
 */
export const McpCatalogRequest = z.object({ actor: Actor, session_id: Id, granted: z.array(z.string()).max(64) });
export const McpCatalogReply = z.object({
  groups: z.array(z.string()),
  tools: z.array(McpToolDef),
  /** Absent from an older runner: every built-in tool is offered. */
  unavailable_builtins: z.array(z.string().max(64)).max(64).default([]),
});
