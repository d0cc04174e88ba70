import { Injectable } from '@nestjs/common';
import { Actor, BUILTIN_TOOLS, LOOP_TOOLS, SYNTHETIC_TOOLS, toolCategory } from '@skald/contracts';
import { KnownToolsRepository } from './known-tools.repository';

/** The registry's names: the built-in tools, then the loop's own. */
const REGISTRY_NAMES: readonly string[] = [...BUILTIN_TOOLS.map((t) => t.name), ...LOOP_TOOLS.map((t) => t.name)];
const SYNTHETIC_NAMES: readonly string[] = SYNTHETIC_TOOLS.map((t) => t.name);
const FIXED = new Set([...REGISTRY_NAMES, ...SYNTHETIC_NAMES]);

/** (user, name) pairs remembered as written, to skip rewriting them each round; least recent dropped past this. */
export const SEEN_MAX = 20_000;
/** A remembered pair is written again after this long (its `last_seen_at`, which the per-user bound evicts by). */
export const SEEN_TTL_MS = 60 * 60 * 1000;

export interface CatalogItem {
  name: string;
  category: string;
  origin: 'registry' | 'synthetic' | 'discovered';
}

/**
 * The known-tools catalog: registry + synthetic (the same for everyone) + the tools offered to each
 * user's model (their MCP tools), kept per user and bounded (`KNOWN_TOOLS_PER_USER`). A user is shown
 * the fixed tools and their own discovered ones; an admin (who writes the rules for every tenant)
 * every user's. Offered names are deduplicated in a bounded memory (`SEEN_MAX`, `SEEN_TTL_MS`) and
 * written in the background, so a round never waits.
 */
@Injectable()
export class CatalogService {
  /** `${userId} ${name}` → when it was last written; insertion order is recency (oldest first). */
  private readonly seen = new Map<string, number>();
  private pending: Promise<void> = Promise.resolve();

  constructor(private readonly repo: KnownToolsRepository) {}

  offered(userId: string, names: readonly string[], now = Date.now()): void {
    const fresh: string[] = [];
    for (const name of new Set(names)) {
      if (FIXED.has(name)) continue;
      const key = `${userId} ${name}`;
      const at = this.seen.get(key);
      if (at !== undefined && now - at < SEEN_TTL_MS) continue;
      this.seen.delete(key);
      this.seen.set(key, now);
      fresh.push(name);
    }
    while (this.seen.size > SEEN_MAX) this.seen.delete(this.seen.keys().next().value as string);
    if (fresh.length === 0) return;
    this.pending = this.pending
      .then(() =>
        this.repo.upsert(
          userId,
          fresh.map((name) => ({ name, category: 'dynamic' })),
        ),
      )
      .catch(() => {
        for (const n of fresh) this.seen.delete(`${userId} ${n}`); // retried the next time they are offered
      });
  }

  /** Resolves when the background writes queued so far are done (for tests and shutdown). */
  settled(): Promise<void> {
    return this.pending;
  }

  /** The catalogue `actor` is shown: the fixed tools, and the discovered ones offered to them (an admin: to anyone). */
  async list(actor: Actor): Promise<CatalogItem[]> {
    const registry: CatalogItem[] = REGISTRY_NAMES.map((name) => ({
      name,
      category: toolCategory(name),
      origin: 'registry',
    }));
    const synthetic: CatalogItem[] = SYNTHETIC_NAMES.map((name) => ({
      name,
      category: toolCategory(name),
      origin: 'synthetic',
    }));
    const discovered: CatalogItem[] = (await this.repo.list(actor.role === 'admin' ? null : actor.userId))
      .filter((t) => !FIXED.has(t.name))
      .map((t) => ({ name: t.name, category: 'dynamic', origin: 'discovered' }));
    return [...registry, ...synthetic, ...discovered];
  }
}
