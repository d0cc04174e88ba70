import type { LlmClientInfo } from '@skald/contracts';
import type { ClientTotals } from './llm-usage.repository';

const int = (n: number): string => n.toLocaleString('en-US');

/** USD with enough digits for small calls: `$0.0123`, `$1.50`. */
export function usd(n: number): string {
  if (n === 0) return '$0.00';
  if (n < 0.01) return `$${n.toFixed(6).replace(/0+$/, '')}`;
  return `$${n.toFixed(n < 1 ? 4 : 2)}`;
}

/** `5 h 12 min`, `42 min`, `less than a minute`. */
export function duration(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 1) return 'less than a minute';
  const h = Math.floor(minutes / 60);
  const m = minutes % 60;
  return h > 0 ? `${h} h ${m} min` : `${m} min`;
}

function healthText(c: LlmClientInfo): string {
  if (c.health === 'healthy') return 'healthy';
  const why = c.last_error ? `: ${c.last_error.length > 80 ? `${c.last_error.slice(0, 77)}...` : c.last_error}` : '';
  return `${c.health} (${c.consecutive_failures} failures in a row${why})`;
}

/**
 * `/models`: the numbered list (the clients the user's groups allow), health, and which client is
 * pinned for this source. `refused`: why the user's groups refuse their turns' model (no client
 * allowed, or the pinned one not allowed), said instead of a list or a pin that would not apply.
 */
export function modelsText(
  items: LlmClientInfo[],
  pinned: string | null,
  source: string,
  scope: 'shared' | 'local',
  refused: string | null = null,
): string {
  if (items.length === 0) return refused ?? 'No LLM clients are configured.';
  const lines = [`Models (${scope === 'shared' ? 'health across every worker' : "this worker's health only"}):`];
  for (const c of items) {
    const extra = [`strength ${c.strength}`];
    if (c.scopes.length > 0) extra.push(`scope ${c.scopes.join('/')}`);
    if (c.input_cost_per_million !== null && c.output_cost_per_million !== null)
      extra.push(`$${c.input_cost_per_million}/$${c.output_cost_per_million} per M tokens in/out`);
    lines.push(
      `  ${c.number}. ${c.name}: ${c.model}, ${extra.join(', ')}, ${healthText(c)}${c.pinned ? '  [pinned]' : ''}`,
    );
  }
  if (pinned && items.some((c) => c.name === pinned)) lines.push(`Pinned for ${source}: ${pinned}.`);
  else if (pinned && refused) lines.push(`Pinned for ${source}: ${pinned}. ${refused} Choose another.`);
  else if (pinned) lines.push(`Pinned for ${source}: ${pinned}, which is no longer configured, so AUTO is used.`);
  else lines.push(`No pin for ${source}: AUTO chooses by strength, scope and health.`);
  lines.push('Change it with /model <number|name|auto>.');
  return lines.join('\n');
}

/** `/cost`: tokens and cost of the conversation, per client, then the budget's lines (budget-texts.ts). */
export function costText(totals: ClientTotals[], budgetLines: readonly string[]): string {
  const lines: string[] = [];
  if (totals.length === 0) lines.push('This conversation has not called a model yet.');
  else {
    const sum = (f: (t: ClientTotals) => number): number => totals.reduce((a, t) => a + f(t), 0);
    const calls = sum((t) => t.calls);
    const input = sum((t) => t.inputTokens);
    const output = sum((t) => t.outputTokens);
    const priced = totals.every((t) => t.costUsd !== null);
    const cost = sum((t) => t.costUsd ?? 0);
    const costPart = priced
      ? usd(cost)
      : totals.some((t) => t.costUsd !== null)
        ? `at least ${usd(cost)}`
        : 'cost unknown';
    lines.push(
      `This conversation: ${int(input + output)} tokens (${int(input)} in, ${int(output)} out) in ${int(calls)} model call${calls === 1 ? '' : 's'}, ${costPart}.`,
    );
    for (const t of totals) {
      const c = t.costUsd === null ? 'no price configured' : usd(t.costUsd);
      lines.push(
        `  ${t.client} (${t.model}): ${int(t.inputTokens + t.outputTokens)} tokens (${int(t.inputTokens)} in, ${int(t.outputTokens)} out), ${int(t.calls)} call${t.calls === 1 ? '' : 's'}, ${c}${t.estimated ? ', partly estimated' : ''}`,
      );
    }
    if (totals.some((t) => t.estimated))
      lines.push('Estimated counts: the provider reported no usage, so tokens were counted as characters / 4.');
  }
  lines.push(...budgetLines);
  return lines.join('\n');
}
