import type { ReadItem } from './session-event-reader';
import type { AnswerStep, StoredStep, TurnAnswer, Usage } from './turn-answer';

/** A live `token_delta` as the answer reads it. */
export interface LiveDelta {
  message_id: string;
  depth: number;
  kind: 'content' | 'reasoning';
  offset: number;
  delta: string;
  /** The conversation's last stored seq when the delta was sent: the events its model call followed. */
  after_seq: number;
}

/** Deltas kept while the message's echo is not read yet (beyond, they are left to the stored rounds). */
export const EARLY_DELTAS_MAX = 4096;

type Kind = LiveDelta['kind'];

/** A round of the root agent as far as its deltas came, and what of it the client was sent. */
interface Round {
  /** The round's text of each kind, as long as its deltas came contiguously. */
  text: Record<Kind, string>;
  /** A delta was lost or the model call was tried again: the rest comes from the stored round. */
  broken: Record<Kind, boolean>;
  /** How much of `text` was sent. */
  sent: Record<Kind, number>;
  /** The stored events its model call followed: it streams once they were read. */
  afterSeq: number;
}

const newRound = (afterSeq: number): Round => ({
  afterSeq,
  text: { content: '', reasoning: '' },
  broken: { content: false, reasoning: false },
  sent: { content: 0, reasoning: 0 },
});

/** The rounds' texts are joined by a blank line, as the non-streamed answer has them. */
const ROUND_SEPARATOR = '\n\n';

/**
 * The answer to a request as the client is sent it: the stored events are the truth
 * (`TurnAnswer`), the root agent's live token deltas say it sooner. A round streams as its deltas
 * arrive; when its stored event is read, what the deltas did not bring (lost on the way, a gateway
 * that subscribed late) is sent from it, so the client ends with exactly the stored answer and no
 * text twice. A round streams once the events stored before its model call (`after_seq`) were
 * read, so every earlier round was (its text, its first tool call), and never before an earlier
 * round still streaming: nothing is sent out of order. A sub-agent's deltas (`depth` > 0), a round
 * already read, and an earlier turn's deltas (a call that followed less than the message's echo)
 * are never sent. When a
 * round's stored text does not go on from what was sent (a model call that failed after it began
 * to stream, tried again), the stored round follows in full after a blank line: the stream cannot
 * take back what it sent.
 */
export class LiveAnswer {
  private readonly rounds = new Map<string, Round>();
  private readonly settled = new Set<string>();
  /** The seq of the message's echo once read; deltas of calls that followed less are an earlier turn's. */
  private echoSeq: number | null = null;
  /** The last stored seq read. */
  private cursor = 0;
  private early: LiveDelta[] = [];
  private wroteContent = false;

  constructor(
    private readonly messageId: string,
    private readonly stored: TurnAnswer,
  ) {}

  get done(): boolean {
    return this.stored.done;
  }

  /** The tokens the stored rounds used. */
  get usage(): Usage {
    return this.stored.usage;
  }

  /** A live delta: what of it may be sent now. */
  live(d: LiveDelta): AnswerStep[] {
    if (this.stored.done || d.depth !== 0 || this.settled.has(d.message_id)) return [];
    if (this.echoSeq === null) {
      if (this.early.length < EARLY_DELTAS_MAX) this.early.push(d);
      return [];
    }
    if (d.after_seq < this.echoSeq) return [];
    this.take(d);
    return this.flush();
  }

  /** A stored event (or the conversation's state): the steps it gives, with what live deltas did not. */
  read(item: ReadItem): AnswerStep[] {
    if (this.stored.done) return [];
    const out: AnswerStep[] = [];
    if (item.kind === 'event') this.cursor = Math.max(this.cursor, item.event.seq);
    if (
      item.kind === 'event' &&
      item.event.type === 'user_message' &&
      item.event.message_id === this.messageId &&
      this.echoSeq === null
    ) {
      const echoSeq = item.event.seq;
      this.echoSeq = echoSeq;
      const early = this.early;
      this.early = [];
      for (const d of early) if (d.after_seq >= echoSeq && !this.settled.has(d.message_id)) this.take(d);
    }
    for (const step of this.stored.step(item)) out.push(...this.fromStore(step));
    // What was stored before a streaming round's model call is read now: the round may go on.
    if (!this.stored.done) out.push(...this.flush());
    return out;
  }

  private take(d: LiveDelta): void {
    let round = this.rounds.get(d.message_id);
    if (!round) {
      round = newRound(d.after_seq);
      this.rounds.set(d.message_id, round);
    }
    if (round.broken[d.kind]) return;
    if (d.offset === round.text[d.kind].length) round.text[d.kind] += d.delta;
    else round.broken[d.kind] = true;
  }

  /** Sends what the rounds' deltas brought, round by round: a round waits for those before it. */
  private flush(): AnswerStep[] {
    const out: AnswerStep[] = [];
    for (const [id, round] of this.rounds) {
      if (this.settled.has(id)) continue;
      // The rounds stored before its call are not all read yet: one may have words to send first.
      if (round.afterSeq > this.cursor) break;
      const reasoning = round.text.reasoning.slice(round.sent.reasoning);
      if (reasoning !== '') {
        round.sent.reasoning += reasoning.length;
        out.push({ kind: 'reasoning', text: reasoning });
      }
      // A round's blank beginning is held back: a round that only calls tools says nothing.
      const content = round.text.content.slice(round.sent.content);
      if (content !== '' && (round.sent.content > 0 || content.trim() !== '')) {
        out.push(this.content(content, round.sent.content === 0));
        round.sent.content += content.length;
      }
      // Every round is stored (its text, its first tool call, or the final answer): the next one
      // streams once this one was read.
      break;
    }
    return out;
  }

  private fromStore(step: StoredStep): AnswerStep[] {
    if (step.kind === 'end' || step.kind === 'failed') return [step];
    if (step.kind === 'note') return [this.content(step.text, true)];
    const out: AnswerStep[] = [];
    const round = this.rounds.get(step.id) ?? newRound(0);
    // Rounds are read in order: one that began before this one and was not stored (its model call
    // stopped) never will be.
    if (this.rounds.has(step.id))
      for (const id of this.rounds.keys()) {
        this.settled.add(id);
        if (id === step.id) break;
      }
    this.settled.add(step.id);
    for (const kind of ['reasoning', 'content'] as const) {
      const full = kind === 'content' ? step.content : step.reasoning;
      const sent = round.text[kind].slice(0, round.sent[kind]);
      if (full.startsWith(sent)) {
        const rest = full.slice(sent.length);
        if (rest !== '') out.push(kind === 'content' ? this.content(rest, sent === '') : { kind, text: rest });
      } else if (full !== '') out.push(kind === 'content' ? this.content(full, true) : { kind, text: full });
    }
    return out;
  }

  /** A piece of the answer's text; `first` of its round, after a blank line when text came before. */
  private content(text: string, first: boolean): AnswerStep {
    const joined = first && this.wroteContent ? `${ROUND_SEPARATOR}${text}` : text;
    this.wroteContent = true;
    return { kind: 'content', text: joined };
  }
}
