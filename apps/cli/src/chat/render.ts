import type { Delivery } from '@skald/contracts';
import { describeScope, describeSecs, head, MAX_SHOWN_LINES, type Line } from './format.ts';
import { editableCommand, type ChatState, type Item, type Pending } from './state.ts';

const TOOL_MARK: Record<string, Line[number]> = {
  running: { text: '◌ ', color: 'yellow' },
  done: { text: '✓ ', color: 'green' },
  error: { text: '✗ ', color: 'red' },
  rejected: { text: '⊘ ', color: 'red' },
  cancelled: { text: '⊘ ', color: 'gray' },
};

/** The lines of one transcript row. */
export function itemLines(item: Item): Line[] {
  switch (item.kind) {
    case 'user':
      return head(item.text, MAX_SHOWN_LINES).map((text, i) => [
        { text: i === 0 ? '› ' : '  ', color: 'cyan', bold: true },
        { text, bold: true },
      ]);
    case 'assistant':
      return item.text.split('\n').map((text) => [{ text }]);
    case 'reasoning':
      return head(item.text, MAX_SHOWN_LINES).map((text) => [{ text, dim: true }]);
    case 'tool': {
      const first: Line = [TOOL_MARK[item.status], { text: item.name, bold: true }];
      if (item.detail) first.push({ text: ` ${item.detail}` });
      const out: Line[] = [first];
      if (item.result && item.status !== 'done') out.push([{ text: `  ${item.result}`, color: 'red' }]);
      else if (item.result) out.push([{ text: `  ${item.result}`, dim: true }]);
      return out;
    }
    case 'notice':
      return [
        [
          {
            text: item.text,
            ...(item.tone === 'error'
              ? { color: 'red' as const }
              : item.tone === 'warn'
                ? { color: 'yellow' as const }
                : { dim: true }),
          },
        ],
      ];
  }
}

/** The streaming text of the answer being written: reasoning dimmed above the content. */
export function streamingLines(s: ChatState['streaming']): Line[] {
  const out: Line[] = [];
  if (s.reasoning) out.push(...s.reasoning.split('\n').map((text): Line => [{ text, dim: true }]));
  if (s.content) out.push(...s.content.split('\n').map((text): Line => [{ text }]));
  return out;
}

/** Messages sent that wait to enter the conversation. */
export function outboxLines(outbox: ChatState['outbox']): Line[] {
  return outbox.map((m): Line => [
    { text: '› ', color: 'cyan', dim: true },
    { text: m.text.split('\n')[0], dim: true },
    { text: m.delivery ? `  (${m.delivery}: waiting)` : '  (sending)', color: 'yellow', dim: true },
  ]);
}

/** How an approval is being answered: by its keys, or with the input (a rejection's note, an edited command). */
export type ApprovalMode = 'keys' | 'note' | 'edit';

/** The prompt of what waits for an answer, with its keys. */
export function pendingLines(p: Pending, mode: ApprovalMode): Line[] {
  if (p.kind === 'question') {
    return [
      [
        { text: '? ', color: 'magenta', bold: true },
        { text: p.title, bold: true },
      ],
      ...p.question.split('\n').map((text): Line => [{ text: `  ${text}` }]),
      ...p.suggestions.map((text, i): Line => [{ text: `  ${i + 1}. `, color: 'cyan' }, { text }]),
      [
        {
          text: p.suggestions.length
            ? '  type an answer, or its number, and press Enter'
            : '  type an answer and press Enter',
          dim: true,
        },
      ],
    ];
  }
  const out: Line[] = [
    [{ text: '! ', color: 'yellow', bold: true }, { text: `approve ${p.tool}? `, bold: true }, { text: p.title }],
    ...p.body.map((l): Line => [{ text: '  ' }, ...l]),
  ];
  if (mode === 'note') {
    out.push([{ text: '  why reject? (the agent reads it; Enter sends, Esc goes back)', dim: true }]);
    return out;
  }
  if (mode === 'edit') {
    out.push([
      { text: '  edit the command: Enter approves it as edited (the rules judge it again), Esc goes back', dim: true },
    ]);
    return out;
  }
  out.push([
    { text: '  y', color: 'green', bold: true },
    { text: ' approve  ' },
    ...(p.scopes
      ? [
          { text: 's', color: 'green' as const, bold: true },
          {
            text: ` approve for this session (${p.scopes.map(describeScope).join(', ')}${p.secs ? `, ${describeSecs(p.secs)}` : ''})  `,
          },
        ]
      : []),
    ...(editableCommand(p) !== null
      ? [{ text: 'e', color: 'yellow' as const, bold: true }, { text: ' edit the command  ' }]
      : []),
    { text: 'n', color: 'red', bold: true },
    { text: ' reject with a note' },
  ]);
  return out;
}

const DELIVERY_HELP: Record<Delivery, string> = {
  steer: 'steer: enters at the next step of this turn',
  queue: 'queue: waits for the next turn',
  interrupt: 'interrupt: stops this turn and starts with it',
};

/** The status line under the input. */
export function statusLine(o: {
  running: boolean;
  connection: 'connecting' | 'open' | 'closed';
  delivery: Delivery;
  stopping: boolean;
}): Line {
  const parts: Line = [];
  if (o.connection !== 'open')
    parts.push({ text: o.connection === 'connecting' ? 'reconnecting… ' : 'disconnected ', color: 'yellow' });
  if (o.stopping) parts.push({ text: 'stopping… Ctrl-C again exits', color: 'yellow' });
  else if (o.running)
    parts.push({
      text: `working · Enter sends (${DELIVERY_HELP[o.delivery]}) · Tab changes · Ctrl-C stops`,
      dim: true,
    });
  else parts.push({ text: 'Enter sends · /help lists commands · Ctrl-C exits', dim: true });
  return parts;
}

/** The next delivery of a message sent while a turn runs (Tab). */
export function nextDelivery(d: Delivery): Delivery {
  return d === 'steer' ? 'queue' : d === 'queue' ? 'interrupt' : 'steer';
}
