import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import WebSocket from 'ws';
import { SkaldClient, type WebSocketConstructor } from '@skald/client';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { makePdf } from '@skald/documents/testing';
import { ROOT } from '../support/db';

jest.setTimeout(180_000);

interface ChatBody {
  messages: Array<{ role: string; content: unknown; tool_call_id?: string }>;
}

/** "Summarise this PDF": what the model is told about an uploaded document and what read_file gives it. */
describe('documents the agent can read', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;

  beforeAll(async () => {
    stack = await Stack.start({ root: ROOT });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('an uploaded PDF is announced as readable and read_file gives its pages; a broken DOCX says why', async () => {
    const email = `docs-${randomUUID()}@skald.test`;
    const u = await admin.createUser(email, 'correct horse battery');
    const { client } = await SkaldClient.login({
      baseUrl: stack.gatewayUrl,
      email,
      password: 'correct horse battery',
      WebSocket: WebSocket as unknown as WebSocketConstructor,
    });
    const pdf = await client.upload(
      'web',
      new Blob([await makePdf([['Revenue grew 12%'], ['Appendix: methods']])]),
      'report.pdf',
    );
    const broken = await client.upload('web', new Blob(['PK not really a zip']), 'broken.docx');
    expect(pdf.path).toBe('/workspace/uploads/report.pdf');

    const m = `docs-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        {
          tool_calls: [
            { name: 'read_file', arguments: { path: pdf.path } },
            { name: 'read_file', arguments: { path: broken.path } },
          ],
        },
        { content: 'summarised' },
      ],
    });
    const conn = client.connect({ source: 'web' });
    await conn.ready();
    const turn = conn.message(`summarise these ${m}`, { attachments: [pdf, broken] });
    for await (const e of turn) void e;
    expect(await turn.end).toMatchObject({ kind: 'done', frame: { content: 'summarised' } });
    conn.stop();

    const bodies = (await sim.requests({ contains: m })).filter((r) => r.status === 200).map((r) => r.body as ChatBody);
    const last = bodies.at(-1)!.messages;
    const userText = String(last.find((x) => x.role === 'user' && String(x.content).includes(m))!.content);
    expect(userText).toContain(
      '[SYSTEM INFO] The user attached files:\n' +
        '- /workspace/uploads/report.pdf (a document: read_file on this path gives its extracted text, with page, sheet or slide markers)\n' +
        '- /workspace/uploads/broken.docx (a document: read_file on this path gives its extracted text, with page, sheet or slide markers)',
    );
    const results = last.filter((x) => x.role === 'tool').map((x) => String(x.content));
    expect(results).toHaveLength(2);
    expect(results[0]).toContain('[text of the PDF /workspace/uploads/report.pdf, 2 pages, extracted by Skald');
    expect(results[0]).toMatch(
      /--- page 1 of 2 ---\n\s+\d+\tRevenue grew 12%\n\s+\d+\t--- page 2 of 2 ---\n\s+\d+\tAppendix: methods/,
    );
    expect(results[1]).toMatch(
      /^Error: read_file: \/workspace\/uploads\/broken.docx is a Word document whose text cannot be read: it is not a valid zip container/,
    );
    // The text lives beside the upload, in the user's workspace.
    expect(existsSync(path.join(stack.env.SKALD_WORKSPACES, u.user!.id, 'uploads/.skald-text/report.pdf.txt'))).toBe(
      true,
    );
  });
});
