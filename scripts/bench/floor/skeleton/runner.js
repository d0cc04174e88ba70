'use strict';
// The skeleton's tool runner: answers `tools.exec` (queue group) for `read_file`, jailed to the
// user's workspace (SKEL_WORKSPACES/<userId>; the path resolved, then its real path checked to be
// inside the workspace's real path, as the architecture's jail must — a symlink cannot escape).
const fs = require('node:fs/promises');
const path = require('node:path');
const { natsConnect, enc, run } = require('./common');

const ROOT_DIR = workspacesDir(process.env.SKEL_WORKSPACES);

/** @param {string | undefined} dir */
function workspacesDir(dir) {
  if (!dir) throw new Error('SKEL_WORKSPACES is not set (the skeleton sets it)');
  return dir;
}

const MAX_BYTES = 1 << 20;

async function readFile(userId, p) {
  const ws = await fs.realpath(path.join(ROOT_DIR, userId));
  const real = await fs.realpath(path.resolve(ws, String(p).replace(/^\/workspace\/?/, '')));
  if (real !== ws && !real.startsWith(ws + path.sep)) throw new Error('path outside the workspace');
  const h = await fs.open(real, 'r');
  try {
    const { size } = await h.stat();
    if (size > MAX_BYTES) throw new Error('file too large');
    return (await h.readFile()).toString('utf8');
  } finally {
    await h.close();
  }
}

run(async () => {
  const nc = await natsConnect('runner');
  nc.subscribe('tools.exec', {
    queue: 'tool-runner',
    callback: (err, msg) => {
      if (err) return;
      const q = msg.json();
      const done = (r) => msg.respond(enc(r));
      if (q.tool !== 'read_file') return done({ ok: false, error: `unknown tool ${q.tool}` });
      readFile(q.actor.userId, q.args?.path ?? '').then(
        (output) => done({ ok: true, output }),
        (e) => done({ ok: false, error: e.message }),
      );
    },
  });
  await nc.flush();
  return () => nc.drain();
});
