#!/usr/bin/env node
'use strict';
// CPU and system calls of one service log line written to a pipe, A/B in one process: pino's
// default destination (SonicBoom: fs.write through the libuv thread pool) vs the service kit's
// StdoutLogDestination (process.stdout on the calling thread). Lines are spread out as a service
// writes them (one per event-loop turn), blocks of 100 alternate between the two; CPU µs per line
// from process.cpuUsage (every thread of the process). The reader is this script's parent.
//
//   npm run build && node scripts/bench/log-line.js [--lines 20000] [--strace]
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : dflt;
};
const LINES = Number(opt('lines', 20000));
const BLOCK = 100;
const WARM = 500;
const ROOT = path.resolve(__dirname, '../..');

async function child() {
  const pino = require(path.join(ROOT, 'node_modules/pino'));
  const kit = require(path.join(ROOT, 'libs/service-kit/dist/logger.js'));
  const fields = { sessionId: 'b1c1d7a4-6a57-4c43-9a4f-0c4bde0e0a11', tool: 'read_file', ms: 3 };
  const options = { level: 'info', base: { service: 'bench', instance: 'bench-1' } };
  const variants = {
    'pino default (SonicBoom)': pino(options),
    StdoutLogDestination: pino(options, new kit.StdoutLogDestination(process.stdout)),
  };
  const only = process.env.LOG_LINE_ONLY;
  const turn = () => new Promise((r) => setImmediate(r));
  const us = Object.fromEntries(Object.keys(variants).map((k) => [k, 0]));
  for (const [name, log] of Object.entries(variants))
    if (!only || name === only)
      for (let i = 0; i < WARM; i++) {
        log.info(fields, 'tool call finished');
        await turn();
      }
  for (let done = 0; done < LINES; done += BLOCK)
    for (const [name, log] of Object.entries(variants)) {
      if (only && name !== only) continue;
      const t = process.cpuUsage();
      for (let i = 0; i < BLOCK; i++) {
        log.info(fields, 'tool call finished');
        await turn();
      }
      await new Promise((r) => setTimeout(r, 1)); // the thread pool's last write is counted too
      const d = process.cpuUsage(t);
      us[name] += d.user + d.system;
    }
  if (!only) process.stderr.write(`${JSON.stringify(us)}\n`);
}

async function run(env) {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [__filename, '--lines', String(LINES)], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    c.stdout.resume();
    let err = '';
    c.stderr.on('data', (d) => (err += d));
    c.once('exit', (code) => (code === 0 ? resolve(err) : reject(new Error(`child exited ${code}: ${err}`))));
  });
}

async function main() {
  if (process.env.LOG_LINE_CHILD) return child();
  if (argv.includes('--strace')) {
    for (const only of ['pino default (SonicBoom)', 'StdoutLogDestination']) {
      const out = path.join(os.tmpdir(), `log-line-strace-${process.pid}.txt`);
      const r = spawnSync(
        'bash',
        ['-c', `strace -f -c -o ${out} "${process.execPath}" "${__filename}" --lines ${LINES} | cat > /dev/null`],
        {
          env: { ...process.env, LOG_LINE_CHILD: '1', LOG_LINE_ONLY: only },
          stdio: 'inherit',
        },
      );
      if (r.status !== 0) throw new Error('strace failed');
      const calls = {};
      for (const l of fs.readFileSync(out, 'utf8').split('\n')) {
        const f = l.trim().split(/\s+/);
        if (f.length >= 5 && /^\d+$/.test(f[3]) && f[f.length - 1] !== 'total') calls[f[f.length - 1]] = Number(f[3]);
      }
      const per = (k) => ((calls[k] ?? 0) / (LINES + WARM)).toFixed(2);
      console.log(
        `${only}: per line (${LINES + WARM} lines, start-up included) write ${per('write')}, futex ${per('futex')}, epoll_pwait ${per('epoll_pwait')}, read ${per('read')}`,
      );
    }
    return;
  }
  const us = JSON.parse(await run({ LOG_LINE_CHILD: '1' }));
  console.log(`one log line to a pipe, ${LINES} lines each, alternating blocks of ${BLOCK}:`);
  for (const [name, total] of Object.entries(us))
    console.log(`  ${name.padEnd(26)} ${(total / LINES).toFixed(1)} µs CPU`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
