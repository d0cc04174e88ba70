import { Body, Controller, Param, Query, Req, Res } from '@nestjs/common';
import { ROUTES } from '@skald/contracts';
import { Route } from '../../http/route.decorator';
import { validate } from '../../http/validate';
import { ClientAddress } from '../actor.decorator';
import { OidcService, Redirect } from './oidc.service';

/** What these handlers use of Express's request and response. */
interface Request {
  originalUrl: string;
  headers: { cookie?: string };
}
interface Response {
  setHeader(name: string, value: string): void;
  cookie(
    name: string,
    value: string,
    options: { httpOnly: boolean; sameSite: 'lax'; secure: boolean; path: string; maxAge: number },
  ): void;
  redirect(status: number, url: string): void;
}

/** The value of the cookie `name` in the request's Cookie header, if any. */
function cookieOf(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Single sign-on: the login page's options, the redirect to a provider, its callback, the handoff, logout. */
@Controller()
export class OidcController {
  constructor(private readonly oidc: OidcService) {}

  @Route(ROUTES.loginOptions)
  options() {
    return this.oidc.loginOptions();
  }

  @Route(ROUTES.oidcStart)
  async start(
    @Param() params: unknown,
    @Query() query: unknown,
    @ClientAddress() address: string,
    @Res() res: Response,
  ): Promise<void> {
    const { provider } = validate(ROUTES.oidcStart.params, params);
    const { return_to } = validate(ROUTES.oidcStart.query, query);
    this.send(res, await this.oidc.start(provider, return_to, address));
  }

  @Route(ROUTES.oidcCallback)
  async callback(@Param() params: unknown, @Req() req: Request, @Res() res: Response): Promise<void> {
    const { provider } = validate(ROUTES.oidcCallback.params, params);
    const raw = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?') + 1) : '';
    if (raw.length > 8192) return this.send(res, { location: '/#oidc-error=failed' });
    const redirect = await this.oidc.callback(provider, new URLSearchParams(raw), (name) =>
      cookieOf(req.headers.cookie, name),
    );
    this.send(res, redirect);
  }

  @Route(ROUTES.oidcRedeem)
  redeem(@Body() body: unknown) {
    return this.oidc.redeem(validate(ROUTES.oidcRedeem.body, body).handoff);
  }

  @Route(ROUTES.oidcLogout)
  async logout(@Param() params: unknown, @Res() res: Response): Promise<void> {
    const { provider } = validate(ROUTES.oidcLogout.params, params);
    this.send(res, await this.oidc.logout(provider));
  }

  /**
   * A 302 that no cache keeps. The binding cookie is HttpOnly, SameSite=Lax (the provider's top-level redirect back
   * carries it, a cross-site subrequest does not), limited to the callback paths, Secure on an https deployment.
   */
  private send(res: Response, r: Redirect): void {
    res.setHeader('cache-control', 'no-store');
    res.setHeader('referrer-policy', 'no-referrer');
    if (r.binding) {
      res.cookie(r.binding.name, r.binding.value, {
        httpOnly: true,
        sameSite: 'lax',
        secure: this.oidc.redirectUri('x').startsWith('https:'),
        path: '/api/auth/oidc/',
        maxAge: r.binding.maxAgeMs,
      });
    }
    res.redirect(302, r.location);
  }
}
