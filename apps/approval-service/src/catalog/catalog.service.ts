import { Injectable } from '@nestjs/common';
import { BUILTIN_TOOLS, LOOP_TOOLS, SYNTHETIC_TOOLS, toolCategory } from '@skald/contracts';
import { KnownToolsRepository } from './known-tools.repository';

/** The registry's names: the built-in tools, then the loop's own. */
const REGISTRY_NAMES: readonly string[] = [...BUILTIN_TOOLS.map((t) => t.name), ...LOOP_TOOLS.map((t) => t.name)];
const SYNTHETIC_NAMES: readonly string[] = SYNTHETIC_TOOLS.map((t) => t.name);

export interface CatalogItem {
  name: string;
  category: string;
  origin: 'registry' | 'synthetic' | 'discovered';
}

/**
 * The known-tools catalog: registry + synthetic + every tool ever offered to a model. Offered
 * names are deduplicated in memory and written in the background, so a round never waits.
 */
@Injectable()
export class CatalogService {
  private readonly seen = new Set<string>([...REGISTRY_NAMES, ...SYNTHETIC_NAMES]);
  private pending: Promise<void> = Promise.resolve();

  constructor(private readonly repo: KnownToolsRepository) {}

  offered(names: readonly string[]): void {
    const fresh = [...new Set(names)].filter((n) => !this.seen.has(n));
    if (fresh.length === 0) return;
    for (const n of fresh) this.seen.add(n);
    this.pending = this.pending
      .then(() => this.repo.upsert(fresh.map((name) => ({ name, category: 'dynamic' }))))
      .catch(() => {
        for (const n of fresh) this.seen.delete(n); // retried the next time they are offered
      });
  }

  /** Resolves when the background writes queued so far are done (for tests and shutdown). */
  settled(): Promise<void> {
    return this.pending;
  }

  async list(): Promise<CatalogItem[]> {
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
    const fixed = new Set([...registry, ...synthetic].map((t) => t.name));
    const discovered: CatalogItem[] = (await this.repo.list())
      .filter((t) => !fixed.has(t.name))
      .map((t) => ({ name: t.name, category: 'dynamic', origin: 'discovered' }));
    return [...registry, ...synthetic, ...discovered];
  }
}
