import { useCallback, useState } from 'react';
import type { McpServerDto } from '@skald/contracts';
import { errorText, type Api } from './api';
import { usePolling } from './poll';

/** The caller's MCP servers: status, tools, credentials listed by key only; each enabled or disabled in place. */
export function McpServers({ api }: { api: Api }) {
  const [servers, setServers] = useState<McpServerDto[]>([]);
  const [error, setError] = useState('');
  const [form, setForm] = useState({ name: '', transport: 'stdio', command: '', args: '', url: '', secrets: '' });
  const fail = (e: unknown) => setError(errorText(e));
  const load = useCallback(() => {
    api.get<{ items: McpServerDto[] }>('/api/mcp/servers').then((r) => setServers(r.items), fail);
  }, [api]);
  usePolling(load, 3000);
  const create = () => {
    const pairs = Object.fromEntries(
      form.secrets
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l.includes('='))
        .map((l) => [l.slice(0, l.indexOf('=')).trim(), l.slice(l.indexOf('=') + 1)]),
    );
    const body =
      form.transport === 'stdio'
        ? {
            name: form.name,
            transport: 'stdio',
            command: form.command,
            args: form.args.split(' ').filter(Boolean),
            ...(Object.keys(pairs).length ? { env: pairs } : {}),
          }
        : {
            name: form.name,
            transport: 'http',
            url: form.url,
            ...(Object.keys(pairs).length ? { headers: pairs } : {}),
          };
    api.post('/api/mcp/servers', body).then(() => {
      setError('');
      setForm({ ...form, name: '', secrets: '' });
      load();
    }, fail);
  };
  return (
    <main className="mcp">
      <h2>MCP servers</h2>
      {error ? <p role="alert">{error}</p> : null}
      <ul className="cards">
        {servers.map((s) => (
          <li key={s.name} className="card">
            <h3>
              {s.name} <small>{s.transport}</small> <span className={`status ${s.status}`}>{s.status}</span>
            </h3>
            <p>{s.transport === 'stdio' ? `${s.command ?? ''} ${(s.args ?? []).join(' ')}` : s.url}</p>
            <p>
              {s.tools_count} tools{s.env_keys?.length ? ` · env: ${s.env_keys.join(', ')}` : ''}
              {s.header_keys?.length ? ` · headers: ${s.header_keys.join(', ')}` : ''}
            </p>
            {s.error ? <p className="notice error">{s.error}</p> : null}
            <div className="actions">
              <button
                type="button"
                onClick={() => void api.patch(`/api/mcp/servers/${s.name}`, { enabled: !s.enabled }).then(load, fail)}
              >
                {s.enabled ? 'Disable' : 'Enable'} <span className="sr-only">{s.name}</span>
              </button>
              <button
                type="button"
                className="danger"
                onClick={() => void api.delete(`/api/mcp/servers/${s.name}`).then(load, fail)}
              >
                Remove <span className="sr-only">{s.name}</span>
              </button>
            </div>
          </li>
        ))}
      </ul>
      <form
        className="grid-form"
        aria-label="new MCP server"
        onSubmit={(e) => {
          e.preventDefault();
          create();
        }}
      >
        <label>
          Name
          <input
            value={form.name}
            onChange={(e) => setForm({ ...form, name: e.target.value })}
            required
            pattern="[a-z0-9_-]{1,24}"
          />
        </label>
        <label>
          Transport
          <select value={form.transport} onChange={(e) => setForm({ ...form, transport: e.target.value })}>
            <option value="stdio">stdio (runs in a sandbox)</option>
            <option value="http">streamable HTTP</option>
          </select>
        </label>
        {form.transport === 'stdio' ? (
          <>
            <label>
              Command
              <input value={form.command} onChange={(e) => setForm({ ...form, command: e.target.value })} />
            </label>
            <label>
              Arguments
              <input value={form.args} onChange={(e) => setForm({ ...form, args: e.target.value })} />
            </label>
          </>
        ) : (
          <label>
            URL
            <input type="url" value={form.url} onChange={(e) => setForm({ ...form, url: e.target.value })} />
          </label>
        )}
        <label>
          {form.transport === 'stdio' ? 'Environment' : 'Headers'} (KEY=value per line; write-only)
          <textarea value={form.secrets} onChange={(e) => setForm({ ...form, secrets: e.target.value })} rows={2} />
        </label>
        <button type="submit">Add server</button>
      </form>
    </main>
  );
}
