#!/usr/bin/env node
import os from 'node:os';
import type { WebSocketConstructor } from '@skald/client';
import { CommanderError } from 'commander';
import WebSocket from 'ws';
import { ConfigStore, configDir } from './config.ts';
import { CliError, describeError, EXIT, type ExitCode } from './errors.ts';
import { buildProgram, usageExit, type Actions } from './program.ts';
import * as rest from './rest-commands.ts';
import { run } from './run.ts';
import type { Runtime } from './runtime.ts';
import { drawLiveAtTerminal } from './terminal.ts';

async function readStdin(max: number): Promise<string> {
  if (process.stdin.isTTY) throw new CliError('nothing to read: pipe the input into skald', EXIT.usage);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of process.stdin as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > max) throw new CliError(`stdin is larger than ${max} bytes`, EXIT.usage);
    chunks.push(c);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function runtime(): Runtime {
  return {
    env: process.env,
    store: new ConfigStore(configDir(process.env, os.homedir())),
    out: (s) => void process.stdout.write(s),
    err: (s) => void process.stderr.write(s),
    readStdin,
    WebSocket: WebSocket as unknown as WebSocketConstructor,
    now: () => Date.now(),
  };
}

function actions(rt: Runtime): Actions {
  return {
    // the terminal UI (Ink, React) loads only for the commands that draw one
    login: async (o) => (await import('./login.ts')).login(rt, o),
    logout: async () => (await import('./login.ts')).logout(rt),
    whoami: async (o) => (await import('./login.ts')).whoami(rt, o),
    chat: async (o) => (await import('./chat/command.ts')).chat(rt, o),
    run: (prompt, o) => run(rt, prompt, o),
    sessionsList: (o) => rest.sessionsList(rt, o),
    sessionsShow: (id, o) => rest.sessionsShow(rt, id, o),
    sessionsRename: (id, title, o) => rest.sessionsRename(rt, id, title, o),
    sessionsDelete: (id, o) => rest.sessionsDelete(rt, id, o),
    inboxList: (o) => rest.inboxList(rt, o),
    inboxApprove: (id, o) => rest.inboxApprove(rt, id, o),
    inboxReject: (id, o) => rest.inboxReject(rt, id, o),
    inboxAnswer: (id, answer, o) => rest.inboxAnswer(rt, id, answer, o),
    cronList: (o) => rest.cronList(rt, o),
    cronAdd: (o) => rest.cronAdd(rt, o),
    cronRemove: (id, o) => rest.cronRemove(rt, id, o),
    cronSetEnabled: (id, enabled, o) => rest.cronSetEnabled(rt, id, enabled, o),
    mcpList: (o) => rest.mcpList(rt, o),
    mcpAdd: (name, o) => rest.mcpAdd(rt, name, o),
    mcpRemove: (name, o) => rest.mcpRemove(rt, name, o),
    tokensList: (o) => rest.tokensList(rt, o),
    tokensCreate: (name, o) => rest.tokensCreate(rt, name, o),
    tokensRevoke: (id, o) => rest.tokensRevoke(rt, id, o),
  };
}

async function main(): Promise<ExitCode> {
  // A reader that went away (`skald run --json | head -1`) ends the command quietly, as for other tools.
  for (const stream of [process.stdout, process.stderr])
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok);
      throw e;
    });
  drawLiveAtTerminal(process.env, { stdinIsTTY: !!process.stdin.isTTY, stdoutIsTTY: !!process.stdout.isTTY });
  const rt = runtime();
  let code: ExitCode = EXIT.ok;
  const program = buildProgram(actions(rt), (c) => (code = c), { out: rt.out, err: rt.err });
  try {
    await program.parseAsync(process.argv);
    return code;
  } catch (e) {
    if (e instanceof CommanderError) return usageExit(e);
    let url: string | undefined;
    try {
      url = (await rt.store.read())?.url;
    } catch {
      url = undefined;
    }
    const d = describeError(e, rt.env.SKALD_URL || url);
    rt.err(`skald: ${d.message}\n`);
    return d.code;
  }
}

void main().then((code) => {
  process.exitCode = code;
  // Sockets or timers left by a failed call must not keep a finished command alive.
  setTimeout(() => process.exit(code), 200).unref();
});
