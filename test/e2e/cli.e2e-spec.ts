import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { ROOT } from '../support/db';
import { Terminal } from '../support/tmux';

jest.setTimeout(240_000);

const CLI = path.join(ROOT, 'apps/cli/dist/main.js');
const PASSWORD = 'correct horse battery';

/** Runs a shell script with `skald` on its PATH; answers its output and exit code. */
function bash(
  script: string,
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve) => {
    execFile('bash', ['-c', script], { env, cwd, timeout: 60_000 }, (e, stdout, stderr) =>
      resolve({ stdout, stderr, code: e ? ((e as { code?: number }).code ?? 1) : 0 }),
    );
  });
}

/** `skald` driven as a person and a script would: chat in a real terminal (tmux), run from bash. */
describe('skald, the terminal client, against a live stack', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let user: ApiClient;
  let userId: string;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const term = new Terminal(120, 40);

  beforeAll(async () => {
    stack = await Stack.start({ root: ROOT });
    sim = new LlmSimAdminClient(stack.simUrl);
    const admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    const email = `cli-${randomUUID()}@skald.test`;
    user = await admin.createUser(email, PASSWORD);
    userId = user.user!.id;
    dir = mkdtempSync(path.join(os.tmpdir(), 'skald-cli-e2e-'));
    writeFileSync(path.join(dir, 'skald'), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`, { mode: 0o755 });
    env = {
      ...process.env,
      PATH: `${dir}:${process.env.PATH}`,
      XDG_CONFIG_HOME: path.join(dir, 'config'),
      SKALD_URL: '',
      SKALD_TOKEN: '',
    };
    // logged in as a script would: the password on stdin, never in the arguments
    const login = await bash(
      `printf '%s\\n' "$PW" | skald login --url ${stack.gatewayUrl} --email ${email} --password-stdin`,
      {
        ...env,
        PW: PASSWORD,
      },
      dir,
    );
    expect(login).toMatchObject({ code: 0 });
    expect(login.stdout).toContain(`logged in to ${stack.gatewayUrl} as ${email}`);
    expect(login.stdout + login.stderr).not.toContain(PASSWORD);
  });

  afterAll(async () => {
    term.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
    await stack?.stop();
  });

  it('stores the credential 0600 in a 0700 directory under XDG_CONFIG_HOME, without printing it', () => {
    const file = path.join(dir, 'config', 'skald', 'credentials.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ url: stack.gatewayUrl, kind: 'password' });
  });

  it('chat: an approval answered inline, a stop with Ctrl-C, an exit, then --session shows the history', async () => {
    const save = `save-${randomUUID()}`;
    const slow = `slow-${randomUUID()}`;
    await sim.script({
      match: save,
      matchIn: 'last_user',
      replies: [
        { tool_calls: [{ name: 'write_file', arguments: { path: 'notes.md', content: 'remember the milk\n' } }] },
        { content: 'Saved the notes.' },
      ],
    });
    await sim.script({
      match: slow,
      matchIn: 'last_user',
      replies: [
        {
          content: Array.from({ length: 300 }, (_, i) => `word${i}`).join(' '),
          latency: { firstByteMs: 50, betweenChunksMs: 100 },
        },
      ],
    });
    // CI=true as in a CI job's shell, where Ink alone would draw only the last frame at exit
    const cmd = (args: string) =>
      `env CI=true PATH='${env.PATH}' XDG_CONFIG_HOME='${env.XDG_CONFIG_HOME}' TERM=xterm-256color sh -c 'skald ${args}; echo "[exited $?]"'`;
    term.start('chat', cmd('chat'));
    const first = await term.waitFor('chat', /ask the agent/);
    const sessionId = /conversation ([0-9a-f-]{36})/.exec(first)![1];

    // a turn whose file write is approved in the chat: the diff, the keys, then the answer
    term.type('chat', `please save the notes ${save}`);
    await term.waitFor('chat', new RegExp(`│ › please save the notes ${save}`));
    term.keys('chat', 'Enter');
    const asked = await term.waitFor(
      'chat',
      /approve file write\? write \/workspace\/notes\.md[\s\S]*\+remember the milk[\s\S]*y approve/,
    );
    expect(asked).toMatch(/n reject with a note/);
    await term.waitFor('chat', /s approve for this session \(write_file in \/workspace/);
    term.keys('chat', 'y');
    await term.waitFor('chat', /✓ write_file notes\.md[\s\S]*Saved the notes\./);
    expect(readFileSync(path.join(stack.env.SKALD_WORKSPACES, userId, 'notes.md'), 'utf8')).toBe('remember the milk\n');

    // a long answer stopped with Ctrl-C: what streamed stays, the turn says stopped, the chat stays open
    term.type('chat', `tell a long story ${slow}`);
    await term.waitFor('chat', new RegExp(`│ › tell a long story ${slow}`));
    term.keys('chat', 'Enter');
    await term.waitFor('chat', /word5 /);
    await term.waitFor('chat', /Ctrl-C stops/);
    term.keys('chat', 'C-c');
    const stopped = await term.waitFor('chat', /stopped[\s\S]*Ctrl-C exits/);
    expect(stopped).not.toMatch(/word299/);
    expect(stopped).not.toMatch(/\[exited/);
    // Ctrl-C when no turn runs leaves
    term.keys('chat', 'C-c');
    await term.waitFor('chat', /\[exited 0\]/);

    // resumed in a new terminal: the conversation's history, then a new turn in it
    term.start('resume', cmd(`chat --session ${sessionId}`));
    const resumed = await term.waitFor('resume', /ask the agent/);
    expect(resumed).toContain(`resumed ${sessionId}`);
    expect(resumed).toMatch(
      /› please save the notes [\s\S]*✓ write_file notes\.md[\s\S]*Saved the notes\.[\s\S]*› tell a long story/,
    );
    term.keys('resume', 'C-c');
    await term.waitFor('resume', /\[exited 0\]/);
  });

  it('chat: a command edited before approving runs as edited, once', async () => {
    const m = `edit-${randomUUID()}`;
    await sim.script({
      match: m,
      matchIn: 'last_user',
      replies: [
        { tool_calls: [{ name: 'execute_cmd', arguments: { command: `touch made-${m}` } }] },
        { content: `Made it ${m}.` },
      ],
    });
    term.start(
      'edit',
      `env CI=true PATH='${env.PATH}' XDG_CONFIG_HOME='${env.XDG_CONFIG_HOME}' TERM=xterm-256color sh -c 'skald chat; echo "[exited $?]"'`,
    );
    await term.waitFor('edit', /ask the agent/);
    term.type('edit', `make the file ${m}`);
    await term.waitFor('edit', new RegExp(`│ › make the file ${m}`));
    term.keys('edit', 'Enter');
    // the edit key comes once the inbox item has given the call's arguments
    await term.waitFor('edit', new RegExp(`approve execute_cmd\\? \\$ touch made-${m}[\\s\\S]*e edit\\s+the command`));
    term.keys('edit', 'e');
    await term.waitFor('edit', new RegExp(`command › touch made-${m}`));
    term.type('edit', '-edited');
    await term.waitFor('edit', new RegExp(`command › touch made-${m}-edited`));
    term.keys('edit', 'Enter');
    await term.waitFor(
      'edit',
      new RegExp(`approving the edited command: \\$ touch made-${m}-edited[\\s\\S]*Made it ${m}\\.`),
    );
    const workspace = path.join(stack.env.SKALD_WORKSPACES, userId);
    expect(existsSync(path.join(workspace, `made-${m}-edited`))).toBe(true);
    expect(existsSync(path.join(workspace, `made-${m}`))).toBe(false);
    term.keys('edit', 'C-c');
    await term.waitFor('edit', /\[exited 0\]/);
  });

  it('run in a bash script: the final answer and 0; --no-wait exits 3 and says where to approve; --json lines parse', async () => {
    const hi = `hi-${randomUUID()}`;
    const cmd = `cmd-${randomUUID()}`;
    const js = `json-${randomUUID()}`;
    await sim.script({ match: hi, matchIn: 'last_user', replies: [{ content: 'Hi from Skald.' }] });
    await sim.script({
      match: cmd,
      matchIn: 'last_user',
      replies: [{ tool_calls: [{ name: 'execute_cmd', arguments: { command: 'git status' } }] }, { content: 'clean' }],
    });
    await sim.script({ match: js, matchIn: 'last_user', replies: [{ reasoning: 'Short.', content: 'As JSON.' }] });
    const script = `
      skald run "say hi ${hi}" > out1; echo "rc1=$?"
      skald run "check the tree ${cmd}" --no-wait > out2 2> err2; echo "rc2=$?"
      echo "answer ${js}" | skald run - --json > out3; echo "rc3=$?"
      skald sessions --json > out4; echo "rc4=$?"
    `;
    const r = await bash(script, env, dir);
    expect(r.stdout.trim().split('\n')).toEqual(['rc1=0', 'rc2=3', 'rc3=0', 'rc4=0']);
    expect(readFileSync(path.join(dir, 'out1'), 'utf8')).toBe('Hi from Skald.\n');

    // needs a human: nothing approved, and the message names the web inbox and the request
    expect(readFileSync(path.join(dir, 'out2'), 'utf8')).toBe('');
    const err2 = readFileSync(path.join(dir, 'err2'), 'utf8');
    const inbox = (await user.get<{ approvals: Array<{ request_id: string; arguments: unknown }> }>('/api/inbox')).body;
    const waiting = inbox.approvals.find((a) => JSON.stringify(a.arguments).includes('git status'));
    expect(waiting).toBeDefined();
    expect(err2).toContain(`${stack.gatewayUrl}/#inbox`);
    expect(err2).toContain(`skald inbox approve|reject ${waiting!.request_id}`);

    const lines = readFileSync(path.join(dir, 'out3'), 'utf8').trim().split('\n');
    const events = lines.map((l) => JSON.parse(l) as { type: string; content?: string; kind?: string });
    expect(events[0]).toMatchObject({ type: 'user_message' });
    expect(events.some((e) => e.type === 'token_delta' && e.kind === 'reasoning')).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: 'done', content: 'As JSON.' });

    // and the approval given from the terminal lets the waiting turn finish
    const approve = await bash(`skald inbox approve ${waiting!.request_id}`, env, dir);
    expect(approve).toMatchObject({ code: 0, stdout: `approved ${waiting!.request_id}\n` });
    const sessions = JSON.parse(readFileSync(path.join(dir, 'out4'), 'utf8')) as { items: Array<{ source: string }> };
    expect(sessions.items.filter((s) => s.source.startsWith('run-')).length).toBeGreaterThanOrEqual(3);
  });

  it('errors are one line naming the problem, with their exit codes', async () => {
    const r = await bash(
      `skald sessions show ${randomUUID()}; echo "rc=$?"; SKALD_TOKEN=nope skald inbox; echo "rc=$?"; skald run "" ; echo "rc=$?"; ` +
        `skald run hi --agent nosuch; echo "rc=$?"; SKALD_URL=ftp://x skald inbox; echo "rc=$?"`,
      env,
      dir,
    );
    expect(r.stdout.trim().split('\n')).toEqual(['rc=1', 'rc=4', 'rc=2', 'rc=1', 'rc=2']);
    expect(r.stderr.trim().split('\n')).toEqual([
      'skald: session not found [404 not_found]',
      'skald: the server refused the credential (expired or revoked): run skald login',
      'skald: the prompt is empty',
      'skald: agent nosuch not found (GET /api/agents lists yours) (agent_id) [404 not_found]',
      'skald: bad server URL "ftp://x": expected http(s)://host[:port], not ftp:',
    ]);
  });
});
