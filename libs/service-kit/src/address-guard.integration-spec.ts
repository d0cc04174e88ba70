import { createServer, Server } from 'node:http';
import { AddressPolicy, BlockedAddressError } from './address-guard';

describe('MCP address policy', () => {
  const none = new AddressPolicy([]);

  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.20.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    'fd00::1',
    'fe80::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
  ])('refuses %s', (ip) => {
    expect(() => none.check('h', ip)).toThrow(BlockedAddressError);
  });

  it.each(['93.184.215.14', '8.8.8.8', '2606:4700::1111'])('allows the public %s', (ip) => {
    expect(() => none.check('h', ip)).not.toThrow();
  });

  it('lets the operator allow a host name, an address or a range', () => {
    const p = new AddressPolicy(['mcp.internal', '10.9.0.0/16', '192.168.5.5']);
    expect(() => p.check('mcp.internal', '10.1.1.1')).not.toThrow();
    expect(() => p.check('other', '10.9.4.4')).not.toThrow();
    expect(() => p.check('other', '192.168.5.5')).not.toThrow();
    expect(() => p.check('other', '10.8.0.1')).toThrow(BlockedAddressError);
  });

  describe('guarded fetch (checked at connect time, after DNS)', () => {
    let server: Server;
    let port = 0;
    beforeAll(async () => {
      server = createServer((req, res) => {
        if (req.url === '/hop') {
          res.writeHead(302, { location: `http://127.0.0.1:${port}/ok` });
          return res.end();
        }
        res.end('ok');
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      port = (server.address() as { port: number }).port;
    });
    afterAll(() => new Promise((r) => server.close(r)));

    it('refuses a name that resolves to loopback, and a literal loopback address', async () => {
      await expect(none.guardedFetch()(`http://localhost:${port}/ok`)).rejects.toThrow();
      await expect(none.guardedFetch()(`http://127.0.0.1:${port}/ok`)).rejects.toThrow(BlockedAddressError);
    });

    it('an allow-listed name connects; a redirect is handed back, not followed, and its target is checked', async () => {
      const fetchAllowed = new AddressPolicy(['localhost']).guardedFetch();
      const ok = await fetchAllowed(`http://localhost:${port}/ok`);
      expect(await ok.text()).toBe('ok');
      const hop = await fetchAllowed(`http://localhost:${port}/hop`);
      expect(hop.status).toBe(302);
      await expect(fetchAllowed(hop.headers.get('location')!)).rejects.toThrow(BlockedAddressError);
    });
  });
});
