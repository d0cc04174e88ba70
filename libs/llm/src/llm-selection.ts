import type { LlmVisionLimits } from './llm-client-config';
import type { LlmHealthState } from './llm-health';
import { strengthRank, type LlmStrength } from './llm-strength';

/** What selection needs to know about a client: its public description and current health. */
export interface LlmClientDescriptor {
  name: string;
  baseUrl: string;
  model: string;
  strength: LlmStrength;
  scopes: string[];
  priority: number;
  cacheControl: boolean;
  /** null: the model cannot see images. */
  vision: LlmVisionLimits | null;
  health: LlmHealthState;
  consecutiveFailures: number;
}

export interface LlmSelectRequest {
  requiredStrength?: LlmStrength;
  scope?: string;
  /** A client pinned by the user (`/model`, `select_client`) or the agent; wins unless already tried. */
  pinned?: string | null;
  /** Clients already tried in this round: never chosen again. */
  tried: readonly string[];
}

/**
 * Why a client was chosen:
 * - `pinned`: the pin, whatever its health;
 * - `fit`: usable, strong enough, serving the scope;
 * - `scope`: usable and serving the scope, but weaker than required (strongest first);
 * - `usable`: usable, any scope (strongest first);
 * - `last_resort`: every remaining client is down: the strongest.
 * Usable means not `down`; within a tier `healthy` comes before `degraded`.
 */
export type LlmSelectReason = 'pinned' | 'fit' | 'scope' | 'usable' | 'last_resort';

export interface LlmSelection {
  client: LlmClientDescriptor;
  reason: LlmSelectReason;
}

const HEALTH_ORDER: Record<LlmHealthState, number> = { healthy: 0, degraded: 1, down: 2 };

export function servesScope(client: LlmClientDescriptor, scope: string | undefined): boolean {
  return scope === undefined || client.scopes.length === 0 || client.scopes.includes(scope);
}

/** AUTO selection, pure: the agent loop asks again with a longer `tried` list after each failure. */
export function selectLlmClient(
  clients: readonly LlmClientDescriptor[],
  request: LlmSelectRequest,
): LlmSelection | null {
  const tried = new Set(request.tried);
  const open = clients.map((client, index) => ({ client, index })).filter(({ client }) => !tried.has(client.name));
  if (request.pinned) {
    const pinned = open.find(({ client }) => client.name === request.pinned);
    if (pinned) return { client: pinned.client, reason: 'pinned' };
  }
  const required = request.requiredStrength === undefined ? 0 : strengthRank(request.requiredStrength);
  const usable = open.filter(({ client }) => client.health !== 'down');
  const inScope = usable.filter(({ client }) => servesScope(client, request.scope));

  type Candidate = (typeof open)[number];
  const byHealth = (a: Candidate, b: Candidate): number =>
    HEALTH_ORDER[a.client.health] - HEALTH_ORDER[b.client.health];
  const byExplicitScope = (a: Candidate, b: Candidate): number =>
    request.scope === undefined
      ? 0
      : Number(!a.client.scopes.includes(request.scope)) - Number(!b.client.scopes.includes(request.scope));
  const byPriority = (a: Candidate, b: Candidate): number => a.client.priority - b.client.priority;
  const weakestFirst = (a: Candidate, b: Candidate): number =>
    strengthRank(a.client.strength) - strengthRank(b.client.strength);
  const strongestFirst = (a: Candidate, b: Candidate): number => -weakestFirst(a, b);
  const inOrder = (a: Candidate, b: Candidate): number => a.index - b.index;
  const pick = (
    candidates: Candidate[],
    ...order: Array<(a: Candidate, b: Candidate) => number>
  ): LlmClientDescriptor | null => {
    const sorted = [...candidates].sort((a, b) => {
      for (const compare of [...order, inOrder]) {
        const result = compare(a, b);
        if (result !== 0) return result;
      }
      return 0;
    });
    return sorted[0]?.client ?? null;
  };

  // The cheapest strong-enough client the operator prefers.
  const fit = pick(
    inScope.filter(({ client }) => strengthRank(client.strength) >= required),
    byHealth,
    byExplicitScope,
    byPriority,
    weakestFirst,
  );
  if (fit) return { client: fit, reason: 'fit' };
  const scoped = pick(inScope, byHealth, strongestFirst, byExplicitScope, byPriority);
  if (scoped) return { client: scoped, reason: 'scope' };
  const any = pick(usable, byHealth, strongestFirst, byPriority);
  if (any) return { client: any, reason: 'usable' };
  const last = pick(open, strongestFirst, byPriority);
  return last ? { client: last, reason: 'last_resort' } : null;
}
