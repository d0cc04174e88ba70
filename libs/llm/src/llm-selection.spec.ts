import type { LlmHealthState } from './llm-health';
import { selectLlmClient, type LlmClientDescriptor, type LlmSelectRequest } from './llm-selection';
import type { LlmStrength } from './llm-strength';

function client(name: string, strength: LlmStrength, extra: Partial<LlmClientDescriptor> = {}): LlmClientDescriptor {
  return {
    name,
    baseUrl: 'http://llm.local/v1',
    model: `${name}-model`,
    strength,
    scopes: [],
    priority: 100,
    cacheControl: false,
    vision: null,
    health: 'healthy',
    consecutiveFailures: 0,
    ...extra,
  };
}

const health = (state: LlmHealthState): Partial<LlmClientDescriptor> => ({ health: state });

function pick(clients: LlmClientDescriptor[], request: Partial<LlmSelectRequest> = {}): string | null {
  const selection = selectLlmClient(clients, { tried: [], ...request });
  return selection ? `${selection.client.name}:${selection.reason}` : null;
}

describe('AUTO selection', () => {
  const weak = client('weak', 'low');
  const mid = client('mid', 'medium');
  const strong = client('strong', 'very_high');

  it('picks the weakest healthy client that is strong enough (cheapest fit)', () => {
    expect(pick([strong, weak, mid], { requiredStrength: 'medium' })).toBe('mid:fit');
    expect(pick([strong, weak, mid], { requiredStrength: 'very_low' })).toBe('weak:fit');
    expect(pick([strong, weak, mid])).toBe('weak:fit');
  });

  it('prefers a lower priority number among strong-enough clients, then configuration order', () => {
    const preferred = client('preferred', 'high', { priority: 1 });
    expect(pick([mid, preferred], { requiredStrength: 'medium' })).toBe('preferred:fit');
    expect(pick([client('a', 'high'), client('b', 'high')], { requiredStrength: 'high' })).toBe('a:fit');
  });

  it('only counts clients serving the scope (general clients serve every scope), explicit scope first', () => {
    const coder = client('coder', 'high', { scopes: ['coding'] });
    const general = client('general', 'high');
    const writer = client('writer', 'medium', { scopes: ['writing'] });
    expect(pick([general, coder, writer], { scope: 'coding', requiredStrength: 'medium' })).toBe('coder:fit');
    expect(pick([writer, general], { scope: 'coding', requiredStrength: 'medium' })).toBe('general:fit');
    expect(pick([writer], { scope: 'coding' })).toBe('writer:usable');
  });

  it('prefers healthy over degraded, and skips down clients while a usable one remains', () => {
    expect(
      pick([client('deg', 'medium', health('degraded')), client('ok', 'high')], { requiredStrength: 'medium' }),
    ).toBe('ok:fit');
    expect(
      pick([client('down', 'medium', health('down')), client('deg', 'high', health('degraded'))], {
        requiredStrength: 'medium',
      }),
    ).toBe('deg:fit');
  });

  it('falls back to the strongest usable client in scope when none is strong enough', () => {
    expect(
      pick([weak, mid, client('off-scope', 'very_high', { scopes: ['x'] })], {
        requiredStrength: 'very_high',
        scope: 'y',
      }),
    ).toBe('mid:scope');
  });

  it('then to any usable client, strongest first, whatever its scope', () => {
    const a = client('a', 'medium', { scopes: ['x'] });
    const b = client('b', 'high', { scopes: ['z'] });
    expect(pick([a, b], { scope: 'y', requiredStrength: 'very_high' })).toBe('b:usable');
  });

  it('then to the strongest client even if it is down', () => {
    const downWeak = client('dw', 'low', health('down'));
    const downStrong = client('ds', 'high', health('down'));
    expect(pick([downWeak, downStrong], { requiredStrength: 'medium' })).toBe('ds:last_resort');
  });

  it('never picks a tried client, and answers null once all were tried', () => {
    expect(pick([weak, mid, strong], { requiredStrength: 'medium', tried: ['mid'] })).toBe('strong:fit');
    expect(pick([weak, mid, strong], { requiredStrength: 'medium', tried: ['mid', 'strong'] })).toBe('weak:scope');
    expect(pick([weak, mid, strong], { tried: ['weak', 'mid', 'strong'] })).toBeNull();
    expect(pick([])).toBeNull();
  });

  it('lets the pin win, even when down, unless it was tried; an unknown pin is ignored', () => {
    const pinnedDown = client('pinned', 'very_low', health('down'));
    expect(pick([mid, pinnedDown], { pinned: 'pinned', requiredStrength: 'high' })).toBe('pinned:pinned');
    expect(pick([mid, pinnedDown], { pinned: 'pinned', tried: ['pinned'] })).toBe('mid:fit');
    expect(pick([mid], { pinned: 'gone' })).toBe('mid:fit');
  });
});
