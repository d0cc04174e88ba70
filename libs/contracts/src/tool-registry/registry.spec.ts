import { builtinToolsMarkdown } from './docs-table';
import {
  BUILTIN_TOOLS,
  builtinTool,
  ENTRY_PATH_TOOLS,
  FS_READ_TOOLS,
  FS_WRITE_TOOLS,
  PATH_TOOLS,
  toolCategory,
} from './registry';

type JsonSchema = {
  type?: string;
  properties?: Record<string, { description?: string; type?: string }>;
  required?: string[];
};

/** The smallest arguments the model may send: each required field with a value of its type. */
function minimalArgs(schema: JsonSchema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of schema.required ?? []) {
    const type = schema.properties?.[name]?.type;
    out[name] = type === 'integer' || type === 'number' ? 1 : type === 'boolean' ? false : 'x';
  }
  return out;
}

describe('the built-in tool registry', () => {
  it('names are unique and valid OpenAI tool names', () => {
    const names = BUILTIN_TOOLS.map((t) => t.name);
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(n).toMatch(/^[a-z0-9_]{1,64}$/);
  });

  it('the schema the model sees is an object schema generated from the arguments, without extra keys', () => {
    for (const t of BUILTIN_TOOLS) {
      const schema = t.parameters as JsonSchema & { additionalProperties?: unknown; $schema?: unknown };
      expect(schema.type).toBe('object');
      expect(schema.additionalProperties).toBe(false);
      expect(schema.$schema).toBeUndefined();
      expect(Object.keys(schema.properties ?? {}).sort()).toEqual(Object.keys(t.args.shape).sort());
      // What the schema says is required is exactly what the runner cannot do without.
      for (const field of Object.keys(t.args.shape)) {
        const without = { ...minimalArgs(schema) };
        delete without[field];
        expect([t.name, field, t.args.safeParse(without).success]).toEqual([
          t.name,
          field,
          !(schema.required ?? []).includes(field),
        ]);
      }
    }
  });

  it('every "(default X)" the model is told is the default the runner applies', () => {
    let checked = 0;
    for (const t of BUILTIN_TOOLS) {
      const schema = t.parameters as JsonSchema;
      for (const [field, prop] of Object.entries(schema.properties ?? {})) {
        const m = /\(default (true|false|\d+)\)/.exec(prop.description ?? '');
        if (!m) continue;
        const parsed = t.args.parse(minimalArgs(schema)) as Record<string, unknown>;
        expect([t.name, field, parsed[field]]).toEqual([t.name, field, JSON.parse(m[1])]);
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(4);
  });

  it('grep_files is case sensitive unless told otherwise', () => {
    const grep = BUILTIN_TOOLS.find((t) => t.name === 'grep_files')!;
    expect(grep.args.parse({ pattern: 'x' })).toMatchObject({ case_sensitive: true });
    expect(grep.args.parse({ pattern: 'x', case_sensitive: 'false' })).toMatchObject({ case_sensitive: false });
  });

  it('every tool has a rule category, and the rule groups and path tools are derived from the definitions', () => {
    for (const t of BUILTIN_TOOLS) expect([t.name, toolCategory(t.name)]).not.toEqual([t.name, 'dynamic']);
    expect(FS_WRITE_TOOLS).toEqual([
      'write_file',
      'edit_file',
      'insert_at_line',
      'replace_lines',
      'append_file',
      'delete_file',
    ]);
    expect(FS_READ_TOOLS).toEqual([
      'list_files',
      'read_file',
      'search_file',
      'grep_files',
      'memory_search',
      'open_file',
    ]);
    expect(new Set(PATH_TOOLS)).toEqual(
      new Set([...FS_READ_TOOLS.filter((n) => n !== 'memory_search'), ...FS_WRITE_TOOLS]),
    );
  });

  it('read tools run concurrently and re-run after a crash; only file writes are previewed', () => {
    for (const t of BUILTIN_TOOLS) {
      if (t.access === 'read') expect([t.name, t.concurrencySafe, t.restartHint]).toEqual([t.name, true, 'reExecute']);
      expect(t.writesFile).toBe(FS_WRITE_TOOLS.includes(t.name));
    }
  });

  it('delete_file is a file write of one path that names the entry itself, re-run by no recovery', () => {
    const del = builtinTool('delete_file');
    expect(del).toMatchObject({
      category: 'filesystem',
      access: 'write',
      writesFile: true,
      pathArgs: [{ name: 'path', defaultsToBase: false }],
      concurrencySafe: false,
      // A re-run after a crash could delete a file created at that path since: never twice.
      restartHint: 'markInterrupted',
      defaultRule: 'require',
      offeredAt: { root: true, subAgents: true },
    });
    expect(del.parameters).toMatchObject({ required: ['path'] });
    expect(del.args.parse({ path: 'x' })).toEqual({ path: 'x', recursive: false });
    expect(del.args.parse({ path: 'x', recursive: 'true' })).toEqual({ path: 'x', recursive: true });
    // Only it removes what its path names (a final symlink is the link, never its target).
    expect(ENTRY_PATH_TOOLS).toEqual(['delete_file']);
    expect(builtinToolsMarkdown()).toContain(
      '| `delete_file` | filesystem | write | `path` | markInterrupted | everywhere | require |',
    );
  });
});
