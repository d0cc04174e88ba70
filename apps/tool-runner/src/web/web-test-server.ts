import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A local HTTP server for the web tools' tests: one handler per path, counting the requests it got. */
export interface TestWebServer {
  port: number;
  /** `http://localhost:<port>` (the name tests allow-list) + path. */
  url(path: string): string;
  /** Requests received, by path. */
  hits: Map<string, number>;
  /** Connections accepted (a refused fetch must make none). */
  connections(): number;
  close(): Promise<void>;
}

export type Route = (req: IncomingMessage, res: ServerResponse) => void;

export async function startTestWebServer(routes: Record<string, Route>, host = '127.0.0.1'): Promise<TestWebServer> {
  const hits = new Map<string, number>();
  let connections = 0;
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const route = routes[path];
    if (!route) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('no such page');
      return;
    }
    route(req, res);
  });
  server.on('connection', () => {
    connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (path) => `http://localhost:${port}${path}`,
    hits,
    connections: () => connections,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A PDF of `pages` pages, each saying `Page <n>: <text>`, made by pdfkit. */
export async function makePdf(pages: number, text: string): Promise<Buffer> {
  const { default: PDFDocument } = await import('pdfkit');
  const doc = new PDFDocument({ compress: true });
  const chunks: Buffer[] = [];
  doc.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<Buffer>((resolve) => doc.on('end', () => resolve(Buffer.concat(chunks))));
  for (let n = 1; n <= pages; n += 1) {
    if (n > 1) doc.addPage();
    doc.text(`Page ${n}: ${text}`);
  }
  doc.end();
  return done;
}
