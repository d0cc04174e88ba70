import { lookup as dnsLookup, LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { Agent, fetch as undiciFetch } from 'undici';

/**
 * Addresses an outbound HTTP request a tenant chose (an MCP HTTP server, a webhook) must not
 * resolve to unless the operator allow-lists them: the service's own loopback, private networks
 * (the cluster, the cloud's metadata service) and link-local, for IPv4 and IPv6 (IPv4-mapped IPv6
 * included).
 */
const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  BLOCKED.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
] as const)
  BLOCKED.addSubnet(net, prefix, 'ipv6');

export class BlockedAddressError extends Error {
  constructor(
    readonly host: string,
    readonly address: string,
    allowVariable: string,
  ) {
    super(
      `${host} resolves to ${address}, a loopback, private or link-local address; targets there must be allow-listed by the operator (${allowVariable})`,
    );
    this.name = 'BlockedAddressError';
  }
}

/**
 * Host names, addresses and CIDR ranges the operator trusts (`SKALD_MCP_ALLOW_HOSTS`,
 * `SKALD_WEBHOOK_ALLOW_HOSTS`: `allowVariable` names the one a refusal should point to).
 */
export class AddressPolicy {
  private readonly hosts = new Set<string>();
  private readonly allowed = new BlockList();

  constructor(
    allowList: readonly string[],
    private readonly allowVariable = 'SKALD_MCP_ALLOW_HOSTS',
  ) {
    for (const raw of allowList) {
      const entry = raw.trim().toLowerCase();
      if (!entry) continue;
      const [net, bits] = entry.split('/');
      const family = isIP(net ?? '');
      if (family && bits !== undefined) this.allowed.addSubnet(net, Number(bits), family === 4 ? 'ipv4' : 'ipv6');
      else if (family) this.allowed.addAddress(net, family === 4 ? 'ipv4' : 'ipv6');
      else this.hosts.add(entry);
    }
  }

  /** Throws {@link BlockedAddressError} when `address` (what `host` resolved to) may not be reached. */
  check(host: string, address: string): void {
    const name = bareHost(host).toLowerCase();
    if (this.hosts.has(name)) return;
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
    const ip = mapped ?? address;
    const family = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
    if (this.allowed.check(ip, family)) return;
    if (BLOCKED.check(ip, family)) throw new BlockedAddressError(name, address, this.allowVariable);
  }

  /**
   * Whether the operator listed `host` itself: its name, its address, or a range its address
   * falls in (a name is not resolved here). What may be reached over plain http where https is
   * otherwise required (push endpoints).
   */
  listed(host: string): boolean {
    const name = bareHost(host).toLowerCase();
    if (this.hosts.has(name)) return true;
    const family = isIP(name);
    return family !== 0 && this.allowed.check(name, family === 6 ? 'ipv6' : 'ipv4');
  }

  /** Resolves `url`'s host and checks every address (the check at creation; connections check again). */
  async checkUrl(url: URL): Promise<void> {
    const host = bareHost(url.hostname);
    const addresses = isIP(host) ? [{ address: host }] : await resolveAll(host);
    for (const a of addresses) this.check(host, a.address);
  }

  /**
   * A `fetch` whose every connection — the first request, each redirect, each reconnect — checks
   * the address it is about to connect to, after DNS resolution (so a name that resolves to a
   * private address, or starts to, is refused at connect time).
   */
  guardedFetch(): typeof fetch {
    const agent = new Agent({
      connect: {
        lookup: (hostname, options, callback) => {
          dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
            if (err) return callback(err, '', 0);
            const list = addresses;
            try {
              for (const a of list) this.check(hostname, a.address);
            } catch (e) {
              return callback(e as Error, '', 0);
            }
            if ((options as { all?: boolean }).all)
              return (callback as (e: null, a: LookupAddress[]) => void)(null, list);
            const first = list[0];
            callback(null, first.address, first.family);
          });
        },
      },
    });
    // Literal IP hosts skip DNS: check them before connecting.
    return async (input: string | URL | Request, init?: RequestInit) => {
      const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
      const host = bareHost(url.hostname);
      if (isIP(host)) this.check(host, host);
      return undiciFetch(input, {
        ...init,
        // Never followed here: the SDK follows same-origin redirects itself, through this fetch again.
        redirect: 'manual',
        dispatcher: agent,
      });
    };
  }
}

/** A URL's host without the brackets of an IPv6 literal. */
const bareHost = (host: string): string => host.replace(/^\[|\]$/g, '');

function resolveAll(host: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) =>
    dnsLookup(host, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))),
  );
}
