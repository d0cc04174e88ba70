import { z } from 'zod';
import { Actor, Id } from './common';

/** An MCP server's name, the middle of `mcp__<server>__<tool>`. */
export const McpServerName = z
  .string()
  .regex(/^[a-z0-9_-]{1,24}$/, 'must be 1–24 characters of a-z, 0-9, _ and -')
  .refine(
    (s) => !s.includes('__') && !s.startsWith('_') && !s.endsWith('_'),
    'must not contain "__" nor start or end with "_" (it separates the parts of a tool name)',
  );

const EnvKey = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be an environment variable name');
const HeaderKey = z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/, 'must be an HTTP header name');
const SecretValue = z.string().max(8192);

/** `POST /api/mcp/servers`: `env` and `headers` values are credentials, write-only. */
export const McpServerInput = z
  .object({
    name: McpServerName,
    transport: z.enum(['stdio', 'http']),
    command: z.string().min(1).max(4096).optional(),
    args: z.array(z.string().max(4096)).max(64).optional(),
    env: z.record(EnvKey, SecretValue).optional(),
    network: z.boolean().optional(),
    url: z
      .url({ protocol: /^https?$/ })
      .max(2048)
      .optional(),
    headers: z.record(HeaderKey, SecretValue).optional(),
  })
  .strict()
  .superRefine((s, ctx) => {
    const misplaced = (field: string, why: string) => ctx.addIssue({ code: 'custom', path: [field], message: why });
    if (s.transport === 'stdio') {
      if (!s.command) misplaced('command', 'a stdio server needs a command');
      if (s.url !== undefined) misplaced('url', 'only an http server has a url');
      if (s.headers !== undefined) misplaced('headers', 'only an http server has headers');
    } else {
      if (!s.url) misplaced('url', 'an http server needs a url');
      for (const f of ['command', 'args', 'env', 'network'] as const)
        if (s[f] !== undefined) misplaced(f, 'only a stdio server has this field');
    }
    if (s.env && Object.keys(s.env).length > 64) misplaced('env', 'at most 64 variables');
    if (s.headers && Object.keys(s.headers).length > 64) misplaced('headers', 'at most 64 headers');
  });
export type McpServerInput = z.infer<typeof McpServerInput>;

export const McpServerStatus = z.enum(['starting', 'ready', 'error', 'disabled']);
export const McpServerDto = z.object({
  name: z.string(),
  transport: z.enum(['stdio', 'http']),
  command: z.string().optional(),
  args: z.array(z.string()).optional(),
  url: z.string().optional(),
  network: z.boolean().optional(),
  enabled: z.boolean(),
  status: McpServerStatus,
  error: z.string().optional(),
  tools_count: z.number().int().nonnegative(),
  env_keys: z.array(z.string()).optional(),
  header_keys: z.array(z.string()).optional(),
});
export type McpServerDto = z.infer<typeof McpServerDto>;
export const McpServerList = z.object({ items: z.array(McpServerDto) });

export const McpServersListRequest = z.object({ actor: Actor });
export const McpServersCreateRequest = z.object({ actor: Actor, server: McpServerInput });
export const McpServersDeleteRequest = z.object({ actor: Actor, name: z.string().max(64) });
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
 * enabled servers) and the tools of the granted ones.
 */
export const McpCatalogRequest = z.object({ actor: Actor, session_id: Id, granted: z.array(z.string()).max(64) });
export const McpCatalogReply = z.object({ groups: z.array(z.string()), tools: z.array(McpToolDef) });
