import { metricsGuard } from '@skald/service-kit/metrics-access';
import type { AuthService } from '../auth/auth.service';
import { adminMetricsBearer } from './metrics-guard';

const remote = { remoteAddress: '10.1.2.3' };
const bearer = (t: string) => ({ headers: { authorization: `Bearer ${t}` }, socket: remote });

describe("the gateway's /metrics: admins' tokens besides service-kit's guard", () => {
  it("an admin's token opens it, a user's or an unknown one does not", async () => {
    const admins = adminMetricsBearer();
    const guard = metricsGuard({ trustLoopback: false, alsoAccept: (b) => admins.accepts(b) });
    // before Nest binds the AuthService: nobody
    expect(await guard(bearer('admin-jwt'))).toBe(false);
    admins.bind({
      authenticate: (t: string) =>
        t === 'unknown'
          ? Promise.reject(new Error('unknown token'))
          : Promise.resolve({ actor: { userId: 'u', role: t === 'admin-jwt' ? 'admin' : 'user' } }),
    } as unknown as AuthService);
    expect(await guard(bearer('admin-jwt'))).toBe(true);
    expect(await guard(bearer('user-jwt'))).toBe(false);
    expect(await guard(bearer('unknown'))).toBe(false);
    expect(await guard({ headers: {}, socket: remote })).toBe(false);
  });
});
