import { Injectable } from '@nestjs/common';
import { effectiveCallPaths, ENTRY_PATH_TOOLS, ParsedRequestOf } from '@skald/contracts';
import { WorkspacesService } from './workspaces.service';

export type ResolveRequest = ParsedRequestOf<'tools.resolve'>;

/**
 * `tools.resolve`: where a call's paths land, asked by the session worker before the approval
 * gate judges the call (the gate judges the lexical path and this one). Each path is named by the
 * shared resolver (`effectiveCallPaths`, which the tool's own argument parsing applies too) and
 * resolved by the jail's `resolve`, the walk its writes take: symlinks inside the workspace
 * followed, the real path of the directory reached, the components that do not exist yet
 * appended. A tool whose path names the entry itself (`delete_file`, `ENTRY_PATH_TOOLS`) lands in
 * its directory so resolved plus the last component as named, never followed (`Jail.resolveEntry`,
 * what `Jail.remove` acts on). A memory document lands where it is named. Null where the jail refuses the path
 * (outside the workspace through a symlink, a file in the middle, an I/O error) or the shared
 * resolver does. Reads only: answering twice changes nothing.
 */
@Injectable()
export class LandingService {
  constructor(private readonly workspaces: WorkspacesService) {}

  async resolve(req: ResolveRequest): Promise<{ landing: Array<string | null> }> {
    const targets = effectiveCallPaths(req.name, req.arguments, req.working_directory);
    if (targets.length === 0) return { landing: [] };
    const jail = await this.workspaces.jail(req.actor.userId);
    const entry = ENTRY_PATH_TOOLS.includes(req.name);
    const landing = await Promise.all(
      targets.map(async (t) => {
        if (!t.ok) return null;
        if (t.value.kind === 'memory') return t.value.virtual;
        return (entry ? jail.resolveEntry(t.value).then((r) => r.landing) : jail.resolve(t.value)).then(
          (l) => l.virtual,
          () => null,
        );
      }),
    );
    return { landing };
  }
}
