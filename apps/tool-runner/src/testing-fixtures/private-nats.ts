import { ChildProcess, spawn } from 'node:child_process';
import { connect, createServer } from 'node:net';

export interface PrivateNats {
  url: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

const up = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });

/**
 * A real NATS server of the test's own, on a free loopback port. Tool runners answer `tools.exec`
 * in the queue group `tool-runner`: on the shared server, any other runner alive on the machine
 * (another suite, a dev stack) would take a share of this test's requests.
 */
export async function startPrivateNats(): Promise<PrivateNats> {
  const bin = process.env.NATS_SERVER_BIN ?? 'nats-server';
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const child: ChildProcess = spawn(bin, ['-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
    let exited = false;
    child.once('exit', () => (exited = true));
    child.once('error', () => (exited = true));
    for (let i = 0; i < 100 && !exited; i++) {
      if (await up(port)) {
        return {
          url: `nats://127.0.0.1:${port}`,
          stop: async () => {
            if (child.exitCode !== null) return;
            const gone = new Promise((r) => child.once('exit', r));
            child.kill('SIGKILL');
            await gone;
          },
        };
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    child.kill('SIGKILL');
  }
  throw new Error(`could not start a private nats-server (${bin}); is it installed?`);
}
