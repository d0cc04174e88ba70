// A real OpenID Provider (panva's certified `oidc-provider`) for the single sign-on tests, run as a child process
// (`fork`) on a loopback port. The parent drives it over IPC:
//   { cmd: 'account', id, claims }   the claims of account `id` (e-mail, email_verified, groups…)
//   { cmd: 'next', id }              the account the next sign-in logs in as (no login form: the interaction ends at once)
//   { cmd: 'rotate' }                a new signing key replaces the old one in the JWKS
//   { cmd: 'tamper', on }            the token endpoint's ID token gets another `sub` without being signed again
// Each answer: { ok: true, ...} or { ok: false, error }. On start it sends { ready: true, issuer }.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import Provider from 'oidc-provider';

const clients = JSON.parse(process.env.OIDC_OP_CLIENTS ?? '[]');
const accounts = new Map();
let nextAccount = 'alice';
let tamper = false;
let keyNo = 0;

function signingKey() {
  keyNo += 1;
  const jwk = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  return { ...jwk, kid: `key-${keyNo}-${randomBytes(4).toString('hex')}`, use: 'sig', alg: 'RS256' };
}

function makeProvider(issuer, key) {
  const provider = new Provider(issuer, {
    clients,
    jwks: { keys: [key] },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    pkce: { required: () => true },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
    scopes: ['openid', 'email', 'profile', 'groups', 'offline_access'],
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false }, rpInitiatedLogout: { enabled: true } },
    findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id, ...(accounts.get(id) ?? {}) }) }),
    enabledJWA: { idTokenSigningAlgValues: ['RS256'] },
    ttl: { Interaction: 600, Grant: 600, Session: 600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
  });
  provider.proxy = false;
  provider.use(async (ctx, next) => {
    await next();
    if (tamper && ctx.path === '/token' && ctx.body && typeof ctx.body.id_token === 'string') {
      const [h, p, s] = ctx.body.id_token.split('.');
      const payload = JSON.parse(Buffer.from(p, 'base64url').toString());
      payload.sub = 'mallory';
      ctx.body = {
        ...ctx.body,
        id_token: [h, Buffer.from(JSON.stringify(payload)).toString('base64url'), s].join('.'),
      };
    }
  });
  return provider;
}

const server = createServer();
server.listen(Number(process.env.OIDC_OP_PORT ?? 0), '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  let provider = makeProvider(issuer, signingKey());
  server.on('request', async (req, res) => {
    if (req.url?.startsWith('/interaction/')) {
      try {
        const details = await provider.interactionDetails(req, res);
        const accountId = nextAccount;
        const grant = new provider.Grant({ accountId, clientId: details.params.client_id });
        grant.addOIDCScope(String(details.params.scope));
        const grantId = await grant.save();
        await provider.interactionFinished(
          req,
          res,
          { login: { accountId }, consent: { grantId } },
          { mergeWithLastSubmission: false },
        );
      } catch (e) {
        res.statusCode = 500;
        res.end(String(e));
      }
      return;
    }
    provider.callback()(req, res);
  });
  process.on('message', (m) => {
    try {
      if (m.cmd === 'account') accounts.set(m.id, m.claims);
      else if (m.cmd === 'next') nextAccount = m.id;
      else if (m.cmd === 'tamper') tamper = m.on;
      else if (m.cmd === 'rotate') provider = makeProvider(issuer, signingKey());
      process.send({ ok: true, seq: m.seq });
    } catch (e) {
      process.send({ ok: false, seq: m.seq, error: String(e) });
    }
  });
  process.send({ ready: true, issuer });
});
process.on('disconnect', () => process.exit(0));
