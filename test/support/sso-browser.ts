/**
 * A browser enough for single sign-on without a page: a cookie jar per origin (names and values; paths and
 * expiry are not modelled beyond deletion) and redirects followed by hand, so that a test can stop at the callback,
 * replay it, drop the cookie or edit its parameters.
 */
export class SsoBrowser {
  private readonly jars = new Map<string, Map<string, string>>();

  cookies(origin: string): Map<string, string> {
    let jar = this.jars.get(origin);
    if (!jar) this.jars.set(origin, (jar = new Map<string, string>()));
    return jar;
  }

  /** One GET with this origin's cookies; the answer's cookies kept. */
  async get(url: string): Promise<{ status: number; location: string | null; body: string }> {
    const u = new URL(url);
    const jar = this.cookies(u.origin);
    const res = await fetch(u, {
      redirect: 'manual',
      headers: jar.size ? { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } : {},
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair, ...attrs] = c.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const gone = value === '' || attrs.some((a) => /^\s*(max-age=0|expires=thu, 01 jan 1970)/i.test(a));
      if (gone) jar.delete(name);
      else jar.set(name, value);
    }
    const location = res.headers.get('location');
    return { status: res.status, location: location ? new URL(location, u).toString() : null, body: await res.text() };
  }

  /** Follows redirects from `url` until one leads to `stopAt` (returned, not followed) or a page answers. */
  async follow(url: string, stopAt: (url: string) => boolean): Promise<string> {
    let next = url;
    for (let hops = 0; hops < 20; hops++) {
      const r = await this.get(next);
      if (!r.location) throw new Error(`no redirect from ${next}: ${r.status} ${r.body.slice(0, 300)}`);
      if (stopAt(r.location)) return r.location;
      next = r.location;
    }
    throw new Error('too many redirects');
  }
}
