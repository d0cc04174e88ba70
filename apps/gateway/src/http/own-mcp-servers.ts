import { Actor, enabledMcpServersRefusal } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { ApiError, callService } from './api-error';

/**
 * 400 naming the entry when a RunContext's `enabled_mcp_servers` names a server that is not one
 * of the caller's (the tool runner's list of them) or is disabled. `at` is where the RunContext sits in the body
 * (`run_context` of a cron job), so the field is named as sent. Nothing is asked when none is named.
 */
export async function refuseForeignMcpServers(
  bus: Bus,
  actor: Actor,
  rc: { enabled_mcp_servers?: readonly string[] } | undefined,
  at = '',
): Promise<void> {
  const names = rc?.enabled_mcp_servers;
  if (!names?.length) return;
  const { items } = await callService(
    'the tool runner is not available to check enabled_mcp_servers; retry shortly',
    () => bus.call('mcp.servers.list', { actor }),
  );
  const refusal = enabledMcpServersRefusal(names, items, at);
  if (refusal) throw new ApiError('invalid_input', refusal.message, refusal.field);
}
