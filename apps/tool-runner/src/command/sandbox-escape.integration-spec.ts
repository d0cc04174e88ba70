import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { EphemeralEvent, topicOf } from '@skald/contracts';
import { Bus, NatsBus } from '@skald/messaging';
import { loadConfig } from '@skald/service-kit/config';
import { AppModule } from '../app.module';
import { ToolRunnerConfigSchema } from '../config';
import { hostProcessesWith } from '../testing-fixtures/host-processes';
import { PrivateNats, startPrivateNats } from '../testing-fixtures/private-nats';

const SECRET = `skald-secret-${randomUUID()}`;
jest.setTimeout(60_000);

/** Fails (never skips) when bubblewrap is missing: CI installs it. */
function requireBwrap(): void {
  try {
    execFileSync('bwrap', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('bubblewrap (bwrap) is not installed: apt-get install -y bubblewrap');
  }
}

/** Processes on the host whose command line contains `marker` (sandboxes and anything they started). */
function leftovers(marker: string): string[] {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((l) => l.includes(marker) && !l.includes('ps -eo'))
    .map((l) => l.trim());
}

async function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = netConnect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

/**
 * The limits in force: cgroups where writable (here: v1), else per-sandbox rlimits; the suite runs in
 * the second mode with SKALD_SANDBOX_CGROUPS=off in the environment (CI runs both).
 */
const CGROUPS = process.env.SKALD_SANDBOX_CGROUPS !== 'off';

describe(`execute_cmd sandbox: the escape suite (bubblewrap, ${CGROUPS ? 'cgroups' : 'rlimits per sandbox'})`, () => {
  let base: string;
  let nats: PrivateNats;
  let NATS_URL: string;
  let app: INestApplication;
  let client: Bus;
  let url: string;
  const log = pino({ level: 'silent' });
  const userId = randomUUID();
  const otherId = randomUUID();
  const actor = { userId, role: 'user' as const };
  let home: string;
  let outside: string;
  const marker = `skald-escape-${process.pid}`;

  beforeAll(async () => {
    requireBwrap();
    // A secret in the runner's own environment: no sandbox may see it.
    process.env.SKALD_ESCAPE_TEST_SECRET = SECRET;
    nats = await startPrivateNats();
    NATS_URL = nats.url;
    base = await mkdtemp(join(tmpdir(), 'skald-escape-'));
    // Searchable by the tenant uids of the rlimit mode (bwrap runs as one and binds by path).
    await chmod(base, 0o711);
    const config = loadConfig(ToolRunnerConfigSchema, {
      ...process.env,
      NATS_URL,
      SKALD_WORKSPACES: join(base, 'workspaces'),
      SKALD_SANDBOX: 'bwrap',
      DATABASE_POOL_SIZE: '2',
      SKALD_SANDBOX_PIDS: '64',
      SKALD_SANDBOX_MEMORY: String(256 * 1024 ** 2),
      SKALD_SANDBOX_TMP_SIZE: String(8 * 1024 ** 2),
      SKALD_WORKSPACE_QUOTA: String(64 * 1024 ** 2),
      SKALD_WORKSPACE_INODES: '5000',
      SKALD_WORKSPACE_SAMPLE_MS: '100',
    });
    app = await NestFactory.create(AppModule.register(config, log, `tool-runner-escape-${process.pid}`), {
      logger: false,
    });
    await app.listen(0, '127.0.0.1');
    url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    client = await NatsBus.connect({ servers: NATS_URL, name: `escape-client-${process.pid}` }, log);
    home = join(base, 'workspaces', userId);
    outside = join(base, 'outside');
    await mkdir(outside);
    await writeFile(join(outside, 'victim.txt'), 'host file\n');
    // The other user's workspace, with a secret.
    await exec('write_file', { path: 'secret.txt', content: `${SECRET}\n` }, otherId);
    await exec('write_file', { path: 'hello.txt', content: 'hello\n' });
  }, 60_000);

  afterEach(async () => {
    // The service stays healthy throughout, and no sandbox process outlives its call (I6).
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: 'ok', service: 'tool-runner' });
    expect(leftovers(marker)).toEqual([]);
  });

  afterAll(async () => {
    delete process.env.SKALD_ESCAPE_TEST_SECRET;
    await client?.drain();
    await app?.close();
    await nats?.stop();
    await rm(base, { recursive: true, force: true });
  });

  function exec(name: string, args: Record<string, unknown>, user = userId, toolCallId = randomUUID()) {
    return client.call(
      'tools.exec',
      {
        actor: { userId: user, role: 'user' },
        session_id: randomUUID(),
        tool_call_id: toolCallId,
        name,
        arguments: args,
      },
      { timeoutMs: 60_000 },
    );
  }
  const cmd = (command: string, more: Record<string, unknown> = {}) =>
    exec('execute_cmd', { command: `: ${marker}; ${command}`, ...more });
  const text = (reply: Awaited<ReturnType<typeof exec>>): string =>
    reply.status === 'done' ? reply.result : reply.status === 'failed' ? reply.error : '(cancelled)';

  it('runs in the workspace with the sandbox state on /readyz', async () => {
    const reply = await cmd('pwd; cat hello.txt; id -u; hostname; echo "HOME=$HOME"');
    expect(reply).toEqual({
      status: 'done',
      result_type: 'text',
      result: '/workspace\nhello\n1000\nsandbox\nHOME=/workspace\n[exit code: 0]',
    });
    const ready = (await (await fetch(`${url}/readyz`)).json()) as { notes: Record<string, string> };
    expect(ready.notes.sandbox).toMatch(
      CGROUPS
        ? /^bubblewrap sandbox ready .*network off; syscall filter x86_64\.bpf; limits \(cgroup v1\): 64 processes \(pids cgroup\)/
        : /^bubblewrap sandbox ready .*network off; syscall filter x86_64\.bpf; limits \(rlimits per sandbox, no cgroup; sandboxes run as their tenant's uid \(\d+-\d+\)\): 64 processes per sandbox \(RLIMIT_NPROC/,
    );
  });

  it('runs multi-line and long commands exactly as sent', async () => {
    const heredoc = await cmd("printf '%s|' 'a  b'\ncat <<'EOF'\n  x \\ y\t\nEOF\n");
    expect(text(heredoc)).toBe('a  b|  x \\ y\t\n[exit code: 0]');
    // Longer than what the launcher reads from stdin: passed as an argument.
    const long = await cmd(`: ${'x'.repeat(5000)}\necho long-ok`);
    expect(text(long)).toBe('long-ok\n[exit code: 0]');
  });

  it("cannot read another user's workspace", async () => {
    const reply = await cmd(
      `cat ../${otherId}/secret.txt; cat /workspace/../${otherId}/secret.txt; ls / ; grep -rs skald-secret /workspace /tmp /etc /usr/local 2>/dev/null | head -3`,
    );
    expect(text(reply)).not.toContain(SECRET);
    expect(text(reply)).toContain('No such file or directory');
    expect((await exec('read_file', { path: `../${otherId}/secret.txt` })).status).toBe('failed');
  });

  it('cannot write outside the workspace (system directories are read-only, / is private)', async () => {
    const reply = await cmd(
      `echo x > /usr/skald-evil; echo x > /etc/skald-evil; echo x > ${join(outside, 'victim.txt')}; mkdir -p /evil && echo x > /evil/f; echo done`,
    );
    expect(text(reply)).toMatch(/Read-only file system|Permission denied|No such file/);
    await expect(stat('/usr/skald-evil')).rejects.toThrow(/ENOENT/);
    await expect(stat('/etc/skald-evil')).rejects.toThrow(/ENOENT/);
    await expect(stat('/evil')).rejects.toThrow(/ENOENT/);
    expect(await readFile(join(outside, 'victim.txt'), 'utf8')).toBe('host file\n');
  });

  it('no tmpfs without a size is writable: / and /dev are read-only, /tmp and /dev/shm are bounded', async () => {
    const reply = await cmd(
      'for f in /x /dev/x; do { echo x > $f; } 2>/dev/null && echo "wrote $f"; done; ' +
        'head -c 20000000 /dev/zero > /dev/shm/big; echo "shm=$?"; head -c 20000000 /dev/zero > /tmp/big; echo "tmp=$?"; rm -f /dev/shm/big /tmp/big; ' +
        'python3 -c "import multiprocessing as m; l = m.Lock(); print(\'posix shm ok\')"',
    );
    expect(text(reply)).not.toContain('wrote');
    expect(text(reply)).toMatch(/shm=1\n[\s\S]*tmp=1\n[\s\S]*posix shm ok/);
  });

  it("sees copies of the host's TLS roots and dynamic-linker files, nothing only root may read", async () => {
    const reply = await cmd(
      'test -s /etc/ssl/certs/ca-certificates.crt && echo tls; test -s /etc/ld.so.cache && echo ld; ls -d /etc/ssl/private 2>&1; ls /etc',
    );
    expect(text(reply)).toMatch(/^tls\nld\nls: cannot access '\/etc\/ssl\/private': No such file or directory\n/);
    expect(text(reply)).not.toMatch(/shadow|sudoers|ssh/);
  });

  it('a symlink made by a command points into the sandbox, and the file tools refuse to follow it out', async () => {
    const victim = join(outside, 'victim.txt');
    const reply = await cmd(`ln -s ${victim} out.txt; ln -s /etc/shadow shadow; cat out.txt; cat shadow; echo end`);
    expect(text(reply)).not.toContain('host file');
    expect(text(reply)).toContain('No such file or directory');
    expect(await exec('read_file', { path: 'out.txt' })).toEqual({
      status: 'failed',
      error: '/workspace/out.txt resolves outside the workspace (through a symlink); access refused',
    });
    expect((await exec('write_file', { path: 'out.txt', content: 'pwned' })).status).toBe('failed');
    expect((await exec('append_file', { path: 'out.txt', content: 'pwned' })).status).toBe('failed');
    expect(await readFile(victim, 'utf8')).toBe('host file\n');
  });

  it('a symlink swapped between check and write never redirects a file-tool write', async () => {
    const victim = join(outside, 'victim.txt');
    // A command flips `swap` between a regular file and a link out, as fast as it can.
    const flipper = cmd(
      `end=$(( $(date +%s) + 3 )); while [ $(date +%s) -lt $end ]; do ln -sfn ${victim} swap; rm -f swap; echo inside > swap; rm -f swap; done; echo flipped`,
      { timeout: 20 },
    );
    const writes = await Promise.all(
      Array.from({ length: 60 }, (_, i) => exec('write_file', { path: 'swap', content: `write ${i}\n` })),
    );
    expect(text(await flipper)).toContain('flipped');
    expect(writes.some((w) => w.status === 'done')).toBe(true);
    expect(await readFile(victim, 'utf8')).toBe('host file\n');
  }, 30_000);

  it('refuses .., absolute paths outside and NUL bytes (file tools and workdir)', async () => {
    expect(text(await exec('read_file', { path: '../../outside/victim.txt' }))).toContain('outside the workspace');
    expect(text(await exec('write_file', { path: '/etc/skald-evil', content: 'x' }))).toContain(
      'outside the workspace',
    );
    expect(text(await exec('write_file', { path: 'a\0b', content: 'x' }))).toContain('NUL byte');
    expect(text(await exec('execute_cmd', { command: 'pwd', workdir: '/workspace/../..' }))).toContain(
      'outside the workspace',
    );
    expect(text(await exec('execute_cmd', { command: 'pwd', workdir: '/etc' }))).toContain('outside the workspace');
    expect(text(await exec('execute_cmd', { command: 'pwd', workdir: '/workspace/a\0' }))).toContain('NUL byte');
    await expect(stat('/etc/skald-evil')).rejects.toThrow(/ENOENT/);
  });

  it('cannot reach Postgres, Redis or NATS on the host loopback', async () => {
    // They are up on the host (the test would prove nothing otherwise).
    expect(await Promise.all([5432, 6379, 4222].map(portOpen))).toEqual([true, true, true]);
    const reply = await cmd(
      'for p in 5432 6379 4222; do if timeout 3 bash -c "echo > /dev/tcp/127.0.0.1/$p" 2>/dev/null; then echo "open $p"; else echo "closed $p"; fi; done',
    );
    expect(text(reply)).toContain('closed 5432\nclosed 6379\nclosed 4222');
  });

  it('contains a fork bomb (pids cgroup or RLIMIT_NPROC) and kills it with the call', async () => {
    const started = Date.now();
    const reply = await cmd('bomb() { bomb | bomb & }; bomb; sleep 2; echo survived', { timeout: 15 });
    expect(text(reply)).toMatch(/Cannot fork|Resource temporarily unavailable|survived|timed out/);
    expect(Date.now() - started).toBeLessThan(20_000);
  }, 30_000);

  it('a 4 GiB allocation is killed at the memory limit', async () => {
    const reply = await cmd(
      'node -e \'const a=[]; for (let i = 0; i < 64; i++) a.push(Buffer.alloc(64 * 1024 * 1024, 1)); console.log("allocated")\'',
      { timeout: 60 },
    );
    expect(text(reply)).not.toContain('allocated');
    expect(text(reply)).toMatch(
      CGROUPS
        ? /memory limit of 256 MiB reached: the kernel killed/
        : /out of memory|Allocation failed|RangeError|ERR_MEMORY_ALLOCATION_FAILED/,
    );
    expect(text(reply)).not.toContain('[exit code: 0]');
  }, 90_000);

  it('`yes` is capped while reading and ends at the timeout with the output so far', async () => {
    const events: EphemeralEvent[] = [];
    const sessionId = randomUUID();
    const sub = client.subscribe(topicOf('ephemeralEvents', userId, sessionId), (e) => {
      events.push(e);
    });
    const id = randomUUID();
    const reply = await client.call(
      'tools.exec',
      {
        actor,
        session_id: sessionId,
        tool_call_id: id,
        name: 'execute_cmd',
        arguments: { command: `: ${marker}; yes`, timeout: 2 },
      },
      { timeoutMs: 30_000 },
    );
    sub.unsubscribe();
    expect(reply.status).toBe('failed');
    const error = text(reply);
    expect(error.startsWith('timed out after 2 s\ny\ny\n')).toBe(true);
    expect(error).toMatch(/\[output truncated: \d+ bytes omitted\]/);
    expect(error.length).toBeLessThan(110 * 1024);
    // Live progress arrived, coalesced and capped.
    expect(events.length).toBeGreaterThan(0);
    expect(events.length).toBeLessThan(200);
    expect(events[0]).toMatchObject({
      type: 'tool_progress',
      session_id: sessionId,
      tool_call_id: id,
      stream: 'stdout',
    });
  }, 30_000);

  it('`sleep 3600` is killed at the timeout, setsid and nohup children included', async () => {
    const started = Date.now();
    const reply = await cmd('echo started; setsid sleep 3601 & nohup sleep 3602 >/dev/null 2>&1 & sleep 3600', {
      timeout: 2,
    });
    expect(reply).toEqual({ status: 'failed', error: 'timed out after 2 s\nstarted\n' });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(leftovers('sleep 360')).toEqual([]);
  });

  it('background processes die when the command exits', async () => {
    expect(text(await cmd('setsid sleep 3603 & echo bye'))).toBe('bye\n[exit code: 0]');
    expect(leftovers('sleep 3603')).toEqual([]);
  });

  it('a cancel kills the whole tree', async () => {
    const id = randomUUID();
    const pending = exec('execute_cmd', { command: `: ${marker}; setsid sleep 3604 & sleep 3600` }, userId, id);
    await new Promise((r) => setTimeout(r, 500));
    client.publish(topicOf('toolCancel', id), { tool_call_id: id });
    expect(await pending).toEqual({ status: 'cancelled' });
    expect(leftovers('sleep 360')).toEqual([]);
  });

  it("cannot read the service's environment through /proc", async () => {
    expect(process.env.SKALD_ESCAPE_TEST_SECRET).toBe(SECRET);
    const reply = await cmd(
      'env; for f in /proc/*/environ; do tr "\\0" "\\n" < "$f"; done 2>/dev/null; cat /proc/1/cmdline | tr "\\0" " "; ls /proc | grep -c "^[0-9]"',
    );
    expect(text(reply)).not.toContain(SECRET);
    expect(text(reply)).not.toContain('DATABASE_URL');
    expect(text(reply)).not.toContain('NATS_URL');
  });

  it("no host process has the model's command, workdir or output in its argv, environment or cwd", async () => {
    const token = `tok${randomUUID().replaceAll('-', '')}`;
    await cmd(`mkdir -p 'dir ${token}'`);
    const running = exec('execute_cmd', {
      command: `: ${marker}; echo ${token}; sleep 1.5; echo "$(printf '%s' ${token} | rev)"`,
      workdir: `/workspace/dir ${token}`,
    });
    await new Promise((r) => setTimeout(r, 700));
    const seen = hostProcessesWith(token);
    const reply = await running;
    expect(text(reply)).toContain(token);
    expect(seen).toEqual([]);
    // The sandbox's own processes run the fixed entry point and read the command inside.
    const inside = await cmd('tr "\\0" " " < /proc/$$/cmdline; echo; cat /.skald-launch | head -c 200');
    expect(text(inside)).toContain('/bin/sh -c ulimit -p 64 && . /.skald-launch');
  });

  it('the syscall filter denies what Docker denies (EPERM), and only what works without it', async () => {
    const probe = join(home, 'probe');
    execFileSync('gcc', ['-O0', '-o', probe, join(__dirname, '../testing-fixtures/seccomp-probe.c')]);
    const parse = (out: string) =>
      Object.fromEntries(
        out
          .split('\n')
          .map((l) => /^(.+) (\d+)$/.exec(l))
          .filter((m): m is RegExpExecArray => m !== null)
          .map((m) => [m[1], Number(m[2])]),
      );
    const inside = parse(text(await cmd('./probe </dev/null')));
    // Differential: on the host (no filter) the same calls that worked there…
    const host = parse(execFileSync(probe, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
    const worked = Object.keys(host).filter((k) => host[k] === 0 && k !== 'fork');
    expect(worked).toEqual(
      expect.arrayContaining(['io_uring_setup', 'keyctl', 'add_key', 'perf_event_open', 'ptrace']),
    );
    // …fail with EPERM inside, as does every other denied call; clone3 answers ENOSYS (libc falls back to clone).
    const EPERM = 1;
    const ENOSYS = 38;
    const { clone3, fork, ...denied } = inside;
    expect(Object.keys(denied).length).toBeGreaterThanOrEqual(22);
    for (const [name, errno] of Object.entries(denied)) expect(`${name} ${errno}`).toBe(`${name} ${EPERM}`);
    expect(clone3).toBe(ENOSYS);
    expect(fork).toBe(0);
    await cmd('rm -f probe');
  });

  it('git, node and python3 (threads, subprocesses) still work under the filter', async () => {
    const reply = await cmd(
      [
        'git init -q repo && cd repo && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m one && git log --oneline | wc -l',
        "node -e \"require('child_process').execFileSync('true'); const {Worker}=require('worker_threads'); new Worker('process.exit(0)',{eval:true}).on('exit',c=>console.log('node',c))\"",
        "python3 -c \"import threading, subprocess; t = threading.Thread(target=lambda: None); t.start(); t.join(); print('python', subprocess.run(['true']).returncode)\"",
        'cd .. && rm -rf repo',
      ].join('\n'),
    );
    expect(text(reply)).toBe('1\nnode 0\npython 0\n[exit code: 0]');
  });

  it('a command with a NUL byte is refused, never split', async () => {
    expect(text(await cmd('echo a\0--bind / /workspace'))).toContain('NUL byte');
  });

  it('cannot fill the shared volume with many files or empty inodes: killed at the quota while running, then refused', async () => {
    const hog = randomUUID();
    const run = (command: string) => exec('execute_cmd', { command: `: ${marker}; ${command}`, timeout: 30 }, hog);
    const started = performance.now();
    const inodes = await run('i=0; while [ $i -lt 1000000 ]; do : > e$i; i=$((i+1)); done; echo finished');
    expect(text(inodes)).toMatch(
      /^workspace quota exceeded: .*files \(quota 64 MiB \/ 5000 files and directories\); the command was killed\./,
    );
    expect(performance.now() - started).toBeLessThan(15_000);
    expect(text(await run('echo again'))).toMatch(/the command was not run/);
    expect(text(await exec('write_file', { path: 'x.txt', content: 'x' }, hog))).toMatch(/^workspace quota exceeded/);
    // The tenant of the rest of the suite is untouched.
    expect(text(await cmd('echo still-fine'))).toBe('still-fine\n[exit code: 0]');
  });

  it('bounds /tmp and file sizes (quota)', async () => {
    const reply = await cmd(
      'head -c 20000000 /dev/zero > /tmp/big; echo "tmp=$?"; head -c 100000000 /dev/zero > big; echo "ws=$?"; ls -l big | cut -d" " -f5',
    );
    expect(text(reply)).toMatch(/tmp=1/);
    expect(text(reply)).toMatch(/ws=15[0-9]|File size limit exceeded/);
    const size = (await stat(join(home, 'big'))).size;
    expect(size).toBeLessThanOrEqual(64 * 1024 ** 2);
    await cmd('rm -f big');
  });
});
