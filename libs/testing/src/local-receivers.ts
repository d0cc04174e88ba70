import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/**
 * The local ends notifications are delivered to in tests: an HTTP webhook receiver and an SMTP
 * server on loopback, each recording what it got. One implementation for the channel, pipeline
 * and whole-stack specs.
 */

/** One request the receiver got. */
export interface ReceivedHook {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** The body as sent (a Web Push body is binary). */
  raw: Buffer;
}

type Answer = (req: IncomingMessage, res: ServerResponse) => void;
const noContent: Answer = (_req, res) => res.writeHead(204).end();

/** An HTTP receiver on 127.0.0.1: answers 204 unless told otherwise for a path (or for all). */
export class LocalWebhookReceiver {
  readonly hits: ReceivedHook[] = [];
  private readonly answers = new Map<string, Answer>();
  private fallback: Answer = noContent;

  private constructor(private readonly server: Server) {}

  static async start(): Promise<LocalWebhookReceiver> {
    let self: LocalWebhookReceiver | null = null;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = req.url ?? '/';
        const raw = Buffer.concat(chunks);
        self!.hits.push({ path, headers: req.headers, body: raw.toString('utf8'), raw });
        (self!.answers.get(path) ?? self!.fallback)(req, res);
      });
    });
    self = new LocalWebhookReceiver(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return self;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** The URL of `path` by `host` (`localhost`: the name an operator allow-lists; `127.0.0.1`: the literal). */
  url(path: string, host = 'localhost'): string {
    return `http://${host}:${this.port}${path}`;
  }

  /** How the receiver answers requests to `path`, or to every path without its own answer. */
  answer(path: string | null, fn: Answer): void {
    if (path === null) this.fallback = fn;
    else this.answers.set(path, fn);
  }

  hitsOn(path: string): ReceivedHook[] {
    return this.hits.filter((h) => h.path === path);
  }

  /** Forgets what was received and every answer set. */
  reset(): void {
    this.hits.length = 0;
    this.answers.clear();
    this.fallback = noContent;
  }

  close(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}

/** One mail the SMTP server accepted. */
export interface ReceivedMail {
  to: string[];
  raw: string;
}

/** An SMTP server on 127.0.0.1 (no TLS, no auth), accepting every mail unless `refuse` holds a reply code. */
export class LocalSmtpServer {
  readonly mails: ReceivedMail[] = [];
  /** A reply code every recipient is refused with (`550`, `451`), or null to accept. */
  refuse: number | null = null;

  private constructor(private readonly server: SMTPServer) {}

  static async start(): Promise<LocalSmtpServer> {
    let self: LocalSmtpServer | null = null;
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onRcptTo(_address, _session, cb) {
        if (self!.refuse !== null)
          return cb(Object.assign(new Error('mailbox unavailable'), { responseCode: self!.refuse }));
        cb();
      },
      onData(stream, session, cb) {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          self!.mails.push({
            to: session.envelope.rcptTo.map((r) => r.address),
            raw: Buffer.concat(chunks).toString(),
          });
          cb();
        });
      },
    });
    self = new LocalSmtpServer(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return self;
  }

  get port(): number {
    return (this.server.server.address() as AddressInfo).port;
  }

  /** `smtp://127.0.0.1:<port>`, what `SKALD_SMTP_URL` is set to. */
  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  mailsTo(address: string): ReceivedMail[] {
    return this.mails.filter((m) => m.to.includes(address));
  }

  reset(): void {
    this.mails.length = 0;
    this.refuse = null;
  }

  close(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}
