import { describeZodError } from './common';
import {
  MCP_TRANSPORT_FIELDS,
  MCP_TRANSPORT_NOUN,
  MCP_TRANSPORTS,
  McpServerInput,
  McpServerPatch,
  type McpTransport,
  refusedEnvName,
} from './mcp';

const stdio = (env: Record<string, string>) => ({ name: 'srv', transport: 'stdio', command: 'node', env });

/** Seeded variants of a name: every mix of upper and lower case. */
function caseVariants(name: string, seed: number, n: number): string[] {
  let x = seed >>> 0;
  const next = (): number => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x / 4294967296;
  };
  return Array.from({ length: n }, () =>
    [...name].map((c) => (next() < 0.5 ? c.toLowerCase() : c.toUpperCase())).join(''),
  );
}

describe('MCP server variables', () => {
  const seed = Date.now() % 100_000;
  console.log(`env name variants seed: ${seed}`);

  it.each([
    'LD_PRELOAD',
    'LD_AUDIT',
    'LD_LIBRARY_PATH',
    'LD_BIND_NOW',
    'GCONV_PATH',
    'GLIBC_TUNABLES',
    'MALLOC_CHECK_',
    'NODE_OPTIONS',
    'BASH_ENV',
    'ENV',
    'BASH_FUNC_ls',
    'PYTHONPATH',
    'PYTHONSTARTUP',
    'PERL5OPT',
    'RUBYOPT',
    'JAVA_TOOL_OPTIONS',
    'PATH',
    'HOME',
  ])('refuses %s in every spelling, with a 400 naming it', (name) => {
    for (const variant of [name, ...caseVariants(name, seed, 50)]) {
      expect(refusedEnvName(variant)).toContain(variant);
      const parsed = McpServerInput.safeParse(stdio({ [variant]: 'x' }));
      expect(parsed.success).toBe(false);
      if (!parsed.success) expect(describeZodError(parsed.error).field).toBe(`env.${variant}`);
    }
  });

  it('accepts ordinary names (credentials, settings)', () => {
    for (const name of ['API_TOKEN', 'GITHUB_TOKEN', 'LDAP_URL', 'NODE_ENV', 'MY_PYTHON_HOME_X', 'TZ', 'LANGUAGE_X'])
      expect([name, refusedEnvName(name)]).toEqual([name, null]);
    expect(McpServerInput.safeParse(stdio({ API_TOKEN: 'secret' })).success).toBe(true);
  });

  it('refuses NUL bytes in the command, arguments and values', () => {
    for (const bad of [
      { ...stdio({}), command: 'node\0--evil' },
      { ...stdio({}), args: ['a\0b'] },
      stdio({ TOKEN: 'a\0b' }),
    ])
      expect(McpServerInput.safeParse(bad).success).toBe(false);
  });
});

describe('MCP server patch: the creation checks of every field it names', () => {
  it.each([
    [{}, ''],
    [{ command: 'a\0b' }, 'command'],
    [{ args: ['ok', 'a\0b'] }, 'args'],
    [{ env: { TOKEN: 'a\0b' } }, 'env'],
    [{ env: { LD_PRELOAD: '/x.so' } }, 'env.LD_PRELOAD'],
    [{ env: Object.fromEntries(Array.from({ length: 65 }, (_, k) => [`V${k}`, 'x'])) }, 'env'],
    [{ headers: Object.fromEntries(Array.from({ length: 65 }, (_, k) => [`h${k}`, 'x'])) }, 'headers'],
    [{ url: 'file:///etc/passwd' }, 'url'],
    [{ name: 'renamed' }, ''],
  ])('refuses %j (at %s)', (patch, path) => {
    const r = McpServerPatch.safeParse(patch);
    expect(r.success).toBe(false);
    if (!r.success) expect(r.error.issues.map((i) => i.path.join('.'))).toContain(path);
  });

  it('takes each field alone, as on creation', () => {
    for (const patch of [
      { enabled: false },
      { command: 'node', args: ['server.js'] },
      { env: { TOKEN: 'secret' }, network: true },
      { url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer x' } },
    ])
      expect(McpServerPatch.safeParse(patch).success).toBe(true);
  });
});

describe('MCP server creation: each field belongs to one transport', () => {
  const minimal: Record<McpTransport, Record<string, unknown>> = {
    stdio: { name: 'srv', transport: 'stdio', command: 'node' },
    http: { name: 'srv', transport: 'http', url: 'https://mcp.example.com/mcp' },
  };
  const valid: Record<string, unknown> = {
    command: 'node',
    args: ['x'],
    env: { TOKEN: 'secret-value' },
    network: true,
    url: 'https://mcp.example.com/mcp',
    headers: { Authorization: 'Bearer x' },
  };

  it('refuses a field of another transport, naming it and the transport that has it', () => {
    for (const transport of MCP_TRANSPORTS)
      for (const other of MCP_TRANSPORTS.filter((t) => t !== transport))
        for (const field of MCP_TRANSPORT_FIELDS[other]) {
          const parsed = McpServerInput.safeParse({ ...minimal[transport], [field]: valid[field] });

          expect({ transport, field, ok: parsed.success }).toEqual({ transport, field, ok: false });
          if (!parsed.success)
            expect(describeZodError(parsed.error)).toMatchObject({
              field,
              message: expect.stringContaining(`only ${MCP_TRANSPORT_NOUN[other]} server`) as unknown,
            });
        }
  });

  it('accepts every field of its own transport', () => {
    for (const transport of MCP_TRANSPORTS) {
      const all = Object.fromEntries(MCP_TRANSPORT_FIELDS[transport].map((f) => [f, valid[f]]));

      expect(McpServerInput.safeParse({ ...minimal[transport], ...all }).success).toBe(true);
    }
  });
});
