'use strict';
// The skeleton's gateway: a WebSocket server on loopback (SKEL_GATEWAY_PORT, 0: any) at /api/ws.
// A socket gets a fresh session (`hello`); its user is the bearer token as given (no JWT: a token is
// verified once per socket, not per message, so it is not on a round's path). A `message` frame
// becomes a NATS request `session.submit` (queue group of the workers) carrying the actor; on the
// answer the socket gets `ack`, or `error` (503) when no worker answers. Session events
// (`events.<user>.<session>`) and ephemeral ones (`ephemeral.<user>.<session>`) are forwarded to the
// user's sockets of that session as the text they came as, one subscription pair per user; events
// that arrive while the socket's message is being submitted are held until after the ack (Skald's
// order: nothing of a message before its ack).
const http = require('node:http');
const { randomUUID } = require('node:crypto');
const { req, natsConnect, enc, run } = require('./common');
const { WebSocketServer } = req('ws');

run(async () => {
  const nc = await natsConnect('gateway');
  const byUser = new Map(); // userId → Set of conns
  const subs = new Map(); // userId → [subscriptions]

  const forward = (msg) => {
    // events.<user>.<session>
    const parts = msg.subject.split('.');
    const set = byUser.get(parts[1]);
    if (!set) return;
    for (const c of set) {
      if (c.sessionId !== parts[2]) continue;
      if (c.held) c.held.push(msg.data);
      else c.ws.send(msg.data, { binary: false });
    }
  };
  const watch = (userId) => {
    if (subs.has(userId)) return;
    subs.set(userId, [
      nc.subscribe(`events.${userId}.*`, { callback: (err, m) => err || forward(m) }),
      nc.subscribe(`ephemeral.${userId}.*`, { callback: (err, m) => err || forward(m) }),
    ]);
  };

  const server = http.createServer((_req, res) => {
    res.statusCode = 404;
    res.end();
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (request, socket, head) => {
    const url = new URL(request.url ?? '/', 'http://x');
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (url.pathname !== '/api/ws' || !token) {
      socket.end('HTTP/1.1 401 Unauthorized\r\n\r\n');
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => open(ws, token, url.searchParams.get('source') ?? 'web'));
  });

  function open(ws, userId, source) {
    const conn = { ws, userId, source, sessionId: randomUUID(), held: null };
    watch(userId);
    let set = byUser.get(userId);
    if (!set) byUser.set(userId, (set = new Set()));
    set.add(conn);
    ws.on('close', () => set.delete(conn));
    ws.on('message', (data) => onFrame(conn, data));
    ws.send(JSON.stringify({ type: 'hello', session_id: conn.sessionId }));
  }

  function onFrame(conn, data) {
    let f;
    try {
      f = JSON.parse(data.toString('utf8'));
    } catch {
      return conn.ws.send(JSON.stringify({ type: 'error', code: 'bad_request' }));
    }
    if (f.type !== 'message' || typeof f.content !== 'string') return;
    conn.held = [];
    const release = (first) => {
      conn.ws.send(first);
      const held = conn.held;
      conn.held = null;
      for (const d of held) conn.ws.send(d, { binary: false });
    };
    nc.request(
      'session.submit',
      enc({
        actor: { userId: conn.userId, role: 'user' },
        session_id: conn.sessionId,
        source: conn.source,
        client_message_id: f.client_message_id,
        content: f.content,
      }),
      { timeout: 5000 },
    ).then(
      (r) =>
        release(
          r.json().ok
            ? JSON.stringify({ type: 'ack', client_message_id: f.client_message_id })
            : JSON.stringify({ type: 'error', code: 'submit_failed' }),
        ),
      () => release(JSON.stringify({ type: 'error', code: 'unavailable', status: 503, retry_after: 1 })),
    );
  }

  await nc.flush();
  await new Promise((resolve) =>
    server.listen(Number(process.env.SKEL_GATEWAY_PORT ?? 0), '127.0.0.1', () => resolve(undefined)),
  );
  process.stdout.write(`port ${/** @type {import('node:net').AddressInfo} */ (server.address()).port}\n`);
  return async () => {
    for (const set of byUser.values()) for (const c of set) c.ws.close(1001);
    server.close();
    await nc.drain();
  };
});
