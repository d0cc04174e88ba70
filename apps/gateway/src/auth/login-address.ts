import ipaddr from 'ipaddr.js';

/**
 * The unit an address is counted by: an IPv4 address (IPv4-mapped IPv6 included), or the /64 of an
 * IPv6 address, since one subscriber commonly holds a whole /64 and could rotate through it.
 */
export function addressKey(address: string): string {
  if (!ipaddr.isValid(address)) return `other:${address.slice(0, 100)}`;
  const ip = ipaddr.process(address);
  if (ip.kind() === 'ipv4') return ip.toString();
  return `${(ip as ipaddr.IPv6).parts
    .slice(0, 4)
    .map((p) => p.toString(16))
    .join(':')}::/64`;
}
