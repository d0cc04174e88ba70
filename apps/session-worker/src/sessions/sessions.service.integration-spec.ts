import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { Mutation, NewMessage } from '@skald/agent-loop';
import { REPLAY_PAGE_EVENTS } from '@skald/contracts';
import { PgSessionStore } from '../loop-adapters/session-store/pg-session-store';
import { SessionsRepository } from './sessions.repository';
import { SessionsService } from './sessions.service';
import { TurnStateRepository } from './turn-state.repository';
import { openRootFrame } from '../testing-fixtures/root-frame';

jest.setTimeout(60_000);

/**
 * What a client reads of a session on real Postgres: the chat history of `GET /{source}/messages`
 * and the event replay behind `resume`.
 */
describe('SessionsService', () => {
  let ds: DataSource;
  let service: SessionsService;
  let repo: SessionsRepository;
  const owner = `sessions-${randomUUID()}`;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 2 } });
    await ds.initialize();
    repo = new SessionsRepository(ds);
    // no approval service here: history pages show how approvals ended, without who answered
    service = new SessionsService(repo, new TurnStateRepository(ds), null as never);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  async function activeSession(userId: string): Promise<{ sessionId: string; store: PgSessionStore; frameId: string }> {
    const { id: sessionId } = await repo.active({ userId, source: 'web' });
    await ds.query(
      `INSERT INTO session_leases (session_id, owner, epoch, expires_at) VALUES ($1, $2, 1, now() + interval '1 hour')`,
      [sessionId, owner],
    );
    const store = new PgSessionStore(ds, { owner, epoch: 1 }, () => undefined);
    const frameId = randomUUID();
    await store.commit(sessionId, [openRootFrame(sessionId, frameId)], []);
    return { sessionId, store, frameId };
  }

  function message(sessionId: string, frameId: string, m: Partial<NewMessage>): NewMessage {
    return {
      id: randomUUID(),
      sessionId,
      frameId,
      role: 'user',
      content: '',
      reasoningContent: null,
      isSynthetic: false,
      attachments: null,
      clientMessageId: null,
      inputTokens: null,
      outputTokens: null,
      createdAt: new Date().toISOString(),
      ...m,
    };
  }

  describe('GET /sessions/{id}', () => {
    it('a message a /stop discarded stands in the debug tree where it was sent, marked discarded', async () => {
      const userId = randomUUID();
      const { sessionId, store, frameId } = await activeSession(userId);
      const t = (sec: number) => new Date(Date.now() - 60_000 + sec * 1000).toISOString();
      await store.commit(
        sessionId,
        [
          { kind: 'appendMessage', message: message(sessionId, frameId, { content: 'build', createdAt: t(0) }) },
          {
            kind: 'appendMessage',
            message: message(sessionId, frameId, { role: 'assistant', content: 'building', createdAt: t(2) }),
          },
          { kind: 'appendMessage', message: message(sessionId, frameId, { content: 'now test', createdAt: t(9) }) },
        ],
        [],
      );
      await ds.query(
        `INSERT INTO session_inbox (id, session_id, user_id, client_message_id, content, delivery, status, settled_at, created_at)
         VALUES ($1, $2, $3, $4, 'also lint', 'steer', 'discarded', now(), $5),
                ($6, $2, $3, $7, 'waiting', 'queue', 'queued', NULL, $8)`,
        [randomUUID(), sessionId, userId, `c-${randomUUID()}`, t(3), randomUUID(), `c-${randomUUID()}`, t(4)],
      );
      const detail = await service.detail({ userId, role: 'user' }, sessionId);
      expect(detail.messages.map((m) => ('content' in m ? m.content : m.kind))).toEqual([
        'build',
        'building',
        'also lint',
        'now test',
      ]);
      expect(detail.messages[2]).toMatchObject({ kind: 'user', status: 'discarded', is_synthetic: false });
    });
  });

  describe('GET /{source}/messages', () => {
    it('shows a message whose turn was stopped, and hides the synthetic task_completed delivery', async () => {
      const userId = randomUUID();
      const { sessionId, store, frameId } = await activeSession(userId);
      const stopped = message(sessionId, frameId, { content: 'a question whose turn was stopped' });
      const delivery = message(sessionId, frameId, { role: 'assistant', isSynthetic: true });
      const callId = randomUUID();
      const asked = message(sessionId, frameId, { content: 'and now?' });
      const answer = message(sessionId, frameId, { role: 'assistant', content: 'the task found 3 files' });
      const mutations: Mutation[] = [
        { kind: 'appendMessage', message: stopped },
        // The next turn starts: the unanswered row is marked failed (stopped).
        { kind: 'markMessageFailed', messageId: stopped.id },
        { kind: 'appendMessage', message: delivery },
        {
          kind: 'createToolCall',
          call: {
            id: callId,
            sessionId,
            frameId,
            messageId: delivery.id,
            index: 0,
            llmCallId: 'call_1',
            name: 'task_completed',
            argumentsText: '{"task_id":"j1","title":"scan"}',
            status: 'done',
            result: '3 files',
            resultType: 'text',
            requestId: null,
            childFrameId: null,
          },
        },
        { kind: 'appendMessage', message: asked },
        { kind: 'appendMessage', message: answer },
      ];
      for (const m of mutations) await store.commit(sessionId, [m], []);

      const page = await service.messages({ userId, role: 'user' }, 'web', undefined, 50);
      expect(page.items.map((i) => [i.role, i.content])).toEqual([
        ['user', 'a question whose turn was stopped'],
        ['user', 'and now?'],
        ['assistant', 'the task found 3 files'],
      ]);
      expect(page.items.flatMap((i) => i.tool_calls ?? []).map((c) => c.name)).not.toContain('task_completed');
      expect(page.has_more).toBe(false);
    });
    it('leaves out rows a regenerate or an edit superseded, and keeps the stopped ones', async () => {
      const userId = randomUUID();
      const { sessionId, store, frameId } = await activeSession(userId);
      const stopped = message(sessionId, frameId, { content: 'stopped' });
      const replaced = message(sessionId, frameId, { content: 'first wording' });
      const replacedAnswer = message(sessionId, frameId, { role: 'assistant', content: 'first answer' });
      const edited = message(sessionId, frameId, { content: 'second wording' });
      for (const m of [stopped, replaced, replacedAnswer, edited])
        await store.commit(sessionId, [{ kind: 'appendMessage', message: m }], []);
      await store.commit(sessionId, [{ kind: 'markMessageFailed', messageId: stopped.id }], []);
      await store.commit(sessionId, [{ kind: 'supersedeMessages', messageIds: [replaced.id, replacedAnswer.id] }], []);

      const page = await service.messages({ userId, role: 'user' }, 'web', undefined, 50);
      expect(page.items.map((i) => i.content)).toEqual(['stopped', 'second wording']);
    });
  });

  describe('GET /{source}/messages: resume_seq (history by REST, then resume after it)', () => {
    const echo = (m: NewMessage) => ({
      type: 'user_message' as const,
      message_id: m.id,
      content: m.content,
    });

    it('a finished turn: the last seq; a running one: the seq before it began (its rows come again, matched by id)', async () => {
      const userId = randomUUID();
      const actor = { userId, role: 'user' as const };
      const { sessionId, store, frameId } = await activeSession(userId);
      const q1 = message(sessionId, frameId, { content: 'q1' });
      const a1 = message(sessionId, frameId, { role: 'assistant', content: 'a1' });
      await store.commit(
        sessionId,
        [
          { kind: 'appendMessage', message: q1 },
          { kind: 'setTurnState', sessionId, state: 'running', turnId: q1.id },
        ],
        [echo(q1)],
      );
      await store.commit(
        sessionId,
        [
          { kind: 'appendMessage', message: a1 },
          { kind: 'setTurnState', sessionId, state: 'finished' },
        ],
        [{ type: 'done', message_id: a1.id, stack_id: frameId, content: 'a1' }],
      );
      let page = await service.messages(actor, 'web', undefined, 50);
      expect({ seq: page.resume_seq, sid: page.session_id }).toEqual({ seq: 2, sid: sessionId });

      const q2 = message(sessionId, frameId, { content: 'q2' });
      await store.commit(
        sessionId,
        [
          { kind: 'appendMessage', message: q2 },
          { kind: 'setTurnState', sessionId, state: 'running', turnId: q2.id },
        ],
        [echo(q2)],
      );
      await store.commit(sessionId, [], [{ type: 'thinking', message_id: randomUUID(), content: 'working' }]);
      page = await service.messages(actor, 'web', undefined, 50);
      // the running turn's events (seq 3, 4) are replayed: the page resumes after seq 2
      expect(page.resume_seq).toBe(2);
      expect(page.items.map((i) => i.content)).toEqual(['q1', 'a1', 'q2']);
      // a parked turn too (still unfinished); a resume to running without a new turn id keeps it
      await store.commit(sessionId, [{ kind: 'setTurnState', sessionId, state: 'parked' }], []);
      await store.commit(sessionId, [{ kind: 'setTurnState', sessionId, state: 'running' }], []);
      expect((await service.messages(actor, 'web', undefined, 50)).resume_seq).toBe(2);
    });

    it('/clear (the root frame closed): the page is empty and stays so; new messages start a new page', async () => {
      const userId = randomUUID();
      const actor = { userId, role: 'user' as const };
      const { sessionId, store, frameId } = await activeSession(userId);
      for (const content of ['before clear', 'its answer'])
        await store.commit(
          sessionId,
          [{ kind: 'appendMessage', message: message(sessionId, frameId, { content }) }],
          [],
        );
      await store.commit(sessionId, [{ kind: 'closeFrame', frameId }], []);
      expect((await service.messages(actor, 'web', undefined, 50)).items).toEqual([]);
      const next = randomUUID();
      await store.commit(sessionId, [openRootFrame(sessionId, next)], []);
      await store.commit(
        sessionId,
        [{ kind: 'appendMessage', message: message(sessionId, next, { content: 'after clear' }) }],
        [],
      );
      expect((await service.messages(actor, 'web', undefined, 50)).items.map((i) => i.content)).toEqual([
        'after clear',
      ]);
    });

    it('attack: pages read while rows and their events are committed always cover exactly the events up to resume_seq', async () => {
      const userId = randomUUID();
      const actor = { userId, role: 'user' as const };
      const { sessionId, store, frameId } = await activeSession(userId);
      const N = 150;
      let writing = true;
      const writer = (async () => {
        for (let i = 0; i < N; i++) {
          const m = message(sessionId, frameId, { content: `m${i}` });
          await store.commit(sessionId, [{ kind: 'appendMessage', message: m }], [echo(m)]);
        }
        writing = false;
      })();
      let reads = 0;
      while (writing && reads < 2_000) {
        const page = await service.messages(actor, 'web', undefined, 200);
        // one row and one event per commit: the page holds exactly the rows of seqs 1..resume_seq
        expect(page.items.map((i) => i.content)).toEqual(
          Array.from({ length: page.resume_seq ?? -1 }, (_, i) => `m${i}`),
        );
        reads++;
      }
      await writer;
      expect(reads).toBeGreaterThan(0);
      const last = await service.messages(actor, 'web', undefined, 200);
      expect(last.resume_seq).toBe(N);
    });
  });

  describe('session.replay', () => {
    /** The gateway's loop: pages until the last one. */
    async function replayAll(userId: string, sessionId: string, after: number) {
      const seqs: number[] = [];
      let cursor = after;
      for (let pages = 0; pages < 10_000; pages++) {
        const page = await service.replay({ userId, role: 'user' }, sessionId, cursor);
        seqs.push(...page.events.map((e) => e.seq));
        if (!('has_more' in page) || !page.has_more) return { seqs, last: page, pages: pages + 1 };
        cursor = page.last_seq;
      }
      throw new Error('replay did not end');
    }

    it('pages through any number of events: 10,050 after seq 0 all arrive, in order, then the state', async () => {
      const userId = randomUUID();
      const { sessionId } = await activeSession(userId);
      const n = 10_050;
      await ds.query(
        `INSERT INTO session_events (session_id, seq, type, payload)
         SELECT $1, g, 'thinking', jsonb_build_object('type', 'thinking', 'message_id', $2::text, 'content', 'e' || g)
           FROM generate_series(1, $3::int) g`,
        [sessionId, randomUUID(), n],
      );
      await ds.query(`UPDATE sessions SET last_seq = $2, turn_state = 'running' WHERE id = $1`, [sessionId, n]);
      const { seqs, last, pages } = await replayAll(userId, sessionId, 0);
      expect(seqs.length).toBe(n);
      expect(seqs.every((s, i) => s === i + 1)).toBe(true);
      expect(last).toMatchObject({ last_seq: n, running: true });
      expect(pages).toBeGreaterThanOrEqual(Math.ceil(n / REPLAY_PAGE_EVENTS));
    });

    it('a page holds no event past the seq its turn state belongs to', async () => {
      const userId = randomUUID();
      const { sessionId } = await activeSession(userId);
      // An event committed after the session row was read (seq 3 with last_seq still 2) waits for
      // the live path: the replay's state is the state as of its last event.
      await ds.query(
        `INSERT INTO session_events (session_id, seq, type, payload)
         SELECT $1, g, 'thinking', jsonb_build_object('type', 'thinking', 'message_id', 'm', 'content', 'e')
           FROM generate_series(1, 3) g`,
        [sessionId],
      );
      await ds.query(`UPDATE sessions SET last_seq = 2, turn_state = 'running' WHERE id = $1`, [sessionId]);
      const page = await service.replay({ userId, role: 'user' }, sessionId, 0);
      expect(page.events.map((e) => e.seq)).toEqual([1, 2]);
      expect(page.last_seq).toBe(2);
    });

    it("answers not_found for another user's session", async () => {
      const { sessionId } = await activeSession(randomUUID());
      await expect(service.replay({ userId: randomUUID(), role: 'user' }, sessionId, 0)).rejects.toMatchObject({
        body: { code: 'not_found' },
      });
    });
  });
});
