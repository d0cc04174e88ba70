import { useCallback, useState } from 'react';
import type { MCP_TRANSPORT_FIELDS, McpServerDto, McpServerInput, McpTransport } from '@skald/contracts';
import { errorText, type Api } from './api';
import { usePolling } from './poll';

/** The transports the form offers, each with its label and what its credentials are called. */
const TRANSPORTS: { readonly [T in McpTransport]: { label: string; secrets: string } } = {
  stdio: { label: 'stdio (runs in a sandbox)', secrets: 'Environment' },
  http: { label: 'streamable HTTP', secrets: 'Headers' },
};
const TRANSPORT_NAMES = Object.keys(TRANSPORTS) as McpTransport[];

interface Form {
  name: string;
  transport: McpTransport;
  command: string;
  args: string;
  network: boolean;
  url: string;
  secrets: string;
}

/**
 * The body the form sends for a transport: every field of that transport's servers, so a field
 * added to a transport does not compile until the form asks for it.
 */
type FormBody = {
  [T in McpTransport]: { name: string; transport: T } & {
    [F in (typeof MCP_TRANSPORT_FIELDS)[T][number]]-?: NonNullable<McpServerInput[F]>;
  };
}[McpTransport];

/** A switch over the transports ends here: a transport no case handled does not compile. */
function unhandled(transport: never): never {
  throw new Error(`unknown MCP transport ${String(transport)}`);
}

/** The body of `POST /api/mcp/servers` the form describes (credentials: `KEY=value` lines). */
function serverBody(form: Form, pairs: Record<string, string>): FormBody {
  const transport = form.transport;
  switch (transport) {
    case 'stdio':
      return {
        name: form.name,
        transport,
        command: form.command,
        args: form.args.split(' ').filter(Boolean),
        env: pairs,
        network: form.network,
      };
    case 'http':
      return { name: form.name, transport, url: form.url, headers: pairs };
    default:
      return unhandled(transport);
  }
}

/** What a listed server runs, or where it is. */
function serverSummary(s: McpServerDto): string {
  switch (s.transport) {
    case 'stdio':
      return `${s.command} ${s.args.join(' ')}`;
    case 'http':
      return s.url;
    default:
      return unhandled(s);
  }
}

/** The caller's MCP servers: status, tools, credentials listed by key only; each enabled or disabled in place. */
export function McpServers({ api }: { api: Api }) {
  const [servers, setServers] = useState<McpServerDto[]>([]);
  const [error, setError] = useState('');
  const [form, setForm] = useState<Form>({
    name: '',
    transport: 'stdio',
    command: '',
    args: '',
    network: false,
    url: '',
    secrets: '',
  });
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
    api.post('/api/mcp/servers', serverBody(form, pairs)).then(() => {
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
            <p>{serverSummary(s)}</p>
            <p>
              {s.tools_count} tools{'env_keys' in s && s.env_keys.length ? ` · env: ${s.env_keys.join(', ')}` : ''}
              {'network' in s && s.network ? ' · network asked' : ''}
              {'header_keys' in s && s.header_keys.length ? ` · headers: ${s.header_keys.join(', ')}` : ''}
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
          <select
            value={form.transport}
            onChange={(e) =>
              setForm({ ...form, transport: TRANSPORT_NAMES.find((t) => t === e.target.value) ?? 'stdio' })
            }
          >
            {TRANSPORT_NAMES.map((t) => (
              <option key={t} value={t}>
                {TRANSPORTS[t].label}
              </option>
            ))}
          </select>
        </label>
        <TransportFields form={form} setForm={setForm} />
        <label>
          {TRANSPORTS[form.transport].secrets} (KEY=value per line; write-only)
          <textarea value={form.secrets} onChange={(e) => setForm({ ...form, secrets: e.target.value })} rows={2} />
        </label>
        <button type="submit">Add server</button>
      </form>
    </main>
  );
}

/** The fields of the form's transport: a command, its arguments and network access, or a URL. */
function TransportFields({ form, setForm }: { form: Form; setForm: (f: Form) => void }) {
  const transport = form.transport;
  switch (transport) {
    case 'stdio':
      return (
        <>
          <label>
            Command
            <input value={form.command} onChange={(e) => setForm({ ...form, command: e.target.value })} />
          </label>
          <label>
            Arguments
            <input value={form.args} onChange={(e) => setForm({ ...form, args: e.target.value })} />
          </label>
          <label className="check">
            <input
              type="checkbox"
              checked={form.network}
              onChange={(e) => setForm({ ...form, network: e.target.checked })}
            />
            Network access (only where the operator allows it)
          </label>
        </>
      );
    case 'http':
      return (
        <label>
          URL
          <input type="url" value={form.url} onChange={(e) => setForm({ ...form, url: e.target.value })} />
        </label>
      );
    default:
      return unhandled(transport);
  }
}
