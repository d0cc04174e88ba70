import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { DataSource } from 'typeorm';
import { ensureDatabase, migrateUp } from '@skald/persistence';
import { ApiClient, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { ROOT } from '../support/db';
import { until } from '../support/until';

jest.setTimeout(480_000);

const run = promisify(execFile);
const CLI = path.join(ROOT, 'libs/persistence/dist/cli.js');
const PASSPHRASE = randomBytes(24).toString('base64url');
/** Quick lease expiry and sweeps: the restored install takes over the interrupted turn within seconds. */
const RECOVERY = { SKALD_LEASE_TTL_MS: '3000', SKALD_SWEEP_INTERVAL_MS: '1000' };
/** An MCP server whose `get-env` tool shows the environment it was started with (its sealed credential). */
const EVERYTHING = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
/** The runner's sandbox sees node_modules (where the MCP server's code is). */
const PER_APP = { 'tool-runner': { SKALD_SANDBOX_RO_BINDS: path.join(ROOT, 'node_modules') } };
/** Six processes boot at once per stack: on a loaded 2-core machine each may take longer than the default 30 s. */

async function cli(args: string[], env: Record<string, string>): Promise<{ stdout: string; stderr: string }> {
  // Only what an operator's shell would have: no SKALD_* of the test process leaks in.
  return run(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH ?? '', SKALD_BACKUP_PASSPHRASE: PASSPHRASE, ...env },
  });
}

/**
 * `cli.js backup` of a stack in the middle of a turn, `cli.js restore` into an empty database and
 * workspaces root, a second stack on the restored install: the conversation is there, the interrupted
 * turn is taken up, a new message gets its answer, the file written before the backup is there, and
 * the user's MCP server starts with the credential sealed before the backup (its key came along).
 */
describe('backup and restore', () => {
  const base = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/skald_test';
  const tag = randomBytes(4).toString('hex');
  const srcUrl = Object.assign(new URL(base), { pathname: `/skald_backup_${tag}` }).toString();
  const dstUrl = Object.assign(new URL(base), { pathname: `/skald_restore_${tag}` }).toString();
  const dir = mkdtempSync(path.join(tmpdir(), 'skald-backup-e2e-'));
  let a: Stack | undefined;
  let b: Stack | undefined;
  let dst: DataSource | undefined;

  beforeAll(async () => {
    await ensureDatabase(srcUrl);
    await migrateUp(srcUrl);
  });
  afterAll(async () => {
    await dst?.destroy();
    await a?.stop();
    await b?.stop();
    rmSync(dir, { recursive: true, force: true });
    const admin = new DataSource({ type: 'postgres', url: base, extra: { max: 1 } });
    await admin.initialize();
    for (const url of [srcUrl, dstUrl])
      await admin.query(`DROP DATABASE IF EXISTS ${new URL(url).pathname.slice(1)} WITH (FORCE)`);
    await admin.destroy();
  });

  it('a stack backed up mid-turn and restored elsewhere continues the conversation', async () => {
    a = await Stack.start({
      root: ROOT,
      perApp: PER_APP,
      env: { DATABASE_URL: srcUrl, ...RECOVERY },
    });
    const simA = new LlmSimAdminClient(a.simUrl);
    const adminOfA = a.admin;
    const adminA = await ApiClient.login(a.gatewayUrl, a.admin.email, a.admin.password);
    const user = await adminA.createUser(`bk-${randomUUID()}@skald.test`, 'correct horse battery');
    const ws = await WsTestClient.connect(a.gatewayUrl, { token: user.token });
    const sessionId = (await ws.waitForType('hello')).session_id as string;
    // A credential sealed with the install's key (stored encrypted, write-only through the API).
    const mcpToken = `mcp-${randomBytes(12).toString('hex')}`;
    const registered = await new ApiClient(a.gatewayUrl, user.token).post('/api/mcp/servers', {
      name: 'everything',
      transport: 'stdio',
      command: 'node',
      args: [EVERYTHING, 'stdio'],
      env: { EVERYTHING_TOKEN: mcpToken },
    });
    expect(registered.status).toBe(201);

    // A finished exchange that wrote a workspace file.
    const m1 = `bk1-${randomUUID()}`;
    await simA.script({
      match: m1,
      replies: [
        {
          tool_calls: [{ name: 'write_file', arguments: { path: 'notes.md', content: 'written before the backup\n' } }],
        },
        { content: 'first answer' },
      ],
    });
    ws.send({ type: 'message', client_message_id: m1, content: `take a note ${m1}` });
    const card = await ws.waitForType('pending_write');
    ws.send({ type: 'approve_tool', request_id: card.request_id });
    await ws.waitFor((f) => f.type === 'done' && f.content === 'first answer', 60_000);

    // A turn whose answer streams for half a minute: the backup is taken while it runs.
    const m2 = `bk2-${randomUUID()}`;
    await simA.script({
      match: m2,
      replies: [{ content: 'slow '.repeat(300), chunkSize: 5, latency: { betweenChunksMs: 500 } }],
    });
    ws.send({ type: 'message', client_message_id: m2, content: `a long one ${m2}` });
    await ws.waitForType('token_delta', 30_000);
    const archive = path.join(dir, 'mid-turn.skald-backup');
    const backedUp = await cli(['backup', '--out', archive], {
      DATABASE_URL: srcUrl,
      SKALD_WORKSPACES: a.env.SKALD_WORKSPACES,
      SKALD_SECRETS_KEY: a.env.SKALD_SECRETS_KEY,
      SKALD_JWT_SECRET: a.env.SKALD_JWT_SECRET,
    });
    expect(JSON.parse(backedUp.stdout.trim().split('\n').pop()!)).toMatchObject({
      msg: 'backup written',
      secrets: ['SKALD_SECRETS_KEY', 'SKALD_JWT_SECRET'],
    });
    // The turn was still streaming when the backup finished.
    expect(ws.frames.some((f) => f.type === 'done' && String(f.content).startsWith('slow'))).toBe(false);
    ws.close();
    // The first install is gone.
    await a.stop();
    a = undefined;

    const restoredWorkspaces = path.join(dir, 'restored-workspaces');
    const secretsFile = path.join(dir, 'restored-secrets.env');
    await cli(['restore', archive, '--secrets-out', secretsFile], {
      DATABASE_URL: dstUrl,
      SKALD_WORKSPACES: restoredWorkspaces,
    });
    const secrets = Object.fromEntries(
      readFileSync(secretsFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    expect(Object.keys(secrets).sort()).toEqual(['SKALD_JWT_SECRET', 'SKALD_SECRETS_KEY']);
    dst = new DataSource({ type: 'postgres', url: dstUrl, extra: { max: 1 } });
    await dst.initialize();
    // What was backed up is a turn in flight.
    const [{ turn_state }] = await dst.query<Array<{ turn_state: string }>>(
      `SELECT turn_state FROM sessions WHERE id = $1`,
      [sessionId],
    );
    expect(turn_state).not.toBe('finished');
    expect(readFileSync(path.join(restoredWorkspaces, user.user!.id, 'notes.md'), 'utf8')).toBe(
      'written before the backup\n',
    );

    b = await Stack.start({
      root: ROOT,
      admin: adminOfA,
      perApp: PER_APP,
      env: { DATABASE_URL: dstUrl, SKALD_WORKSPACES: restoredWorkspaces, ...secrets, ...RECOVERY },
    });
    const simB = new LlmSimAdminClient(b.simUrl);
    // The interrupted turn is taken up by the new install's workers and finishes.
    await until('the interrupted turn to finish on the restored install', async () => {
      const rows = await dst!.query<Array<{ turn_state: string }>>(`SELECT turn_state FROM sessions WHERE id = $1`, [
        sessionId,
      ]);
      return rows[0].turn_state === 'finished';
    });
    // The user's token of the first install opens the second (its JWT key came with the backup).
    const again = await WsTestClient.connect(b.gatewayUrl, { token: user.token });
    expect((await again.waitForType('hello')).session_id).toBe(sessionId);
    const m3 = `bk3-${randomUUID()}`;
    await simB.script({
      match: m3,
      replies: [{ tool_calls: [{ name: 'read_file', arguments: { path: 'notes.md' } }] }, { content: 'third answer' }],
    });
    again.send({ type: 'message', client_message_id: m3, content: `read the note ${m3}` });
    await again.waitFor((f) => f.type === 'done' && f.content === 'third answer', 60_000);
    // The model was given the whole conversation, and the restored file's content.
    const sent = JSON.stringify((await simB.requests({ contains: m3 })).at(-1)?.body);
    expect(sent).toContain(m1);
    expect(sent).toContain('first answer');
    expect(sent).toContain(m2);
    expect(sent).toContain('written before the backup');
    const exported = await new ApiClient(b.gatewayUrl, user.token).get<string>(
      `/api/sessions/${sessionId}/export?format=markdown`,
    );
    expect(exported.status).toBe(200);
    for (const text of [m1, 'first answer', m2, m3, 'third answer']) expect(exported.body).toContain(text);

    // The MCP credential sealed on the first install opens on the second: the server, started on
    // the restored install, was given the token.
    const m4 = `bk4-${randomUUID()}`;
    await simB.script({
      match: m4,
      replies: [
        { tool_calls: [{ name: 'activate_tools', arguments: { groups: ['everything'] } }] },
        { tool_calls: [{ name: 'mcp__everything__skald_start', arguments: {} }] },
        { tool_calls: [{ name: 'mcp__everything__get-env', arguments: {} }] },
        { content: 'fourth answer' },
      ],
    });
    again.send({ type: 'message', client_message_id: m4, content: `show the server's environment ${m4}` });
    const startCard = await again.waitFor(
      (f) => f.type === 'approval_required' && f.tool_name === 'mcp__everything__skald_start',
      60_000,
    );
    again.send({
      type: 'approve_tool',
      request_id: startCard.request_id,
      bypass_secs: 0,
      bypass_scope: { mcp_server: 'everything' },
    });
    const env = await again.waitFor(
      (f) => f.type === 'tool_done' && String(f.result).includes('EVERYTHING_TOKEN'),
      60_000,
    );
    expect(String(env.result)).toContain(mcpToken);
    await again.waitFor((f) => f.type === 'done' && f.content === 'fourth answer', 60_000);
    again.close();
  });
});
