import { useEffect, useState } from 'react';
import { loginOptions, redeemSignIn, type LoginOptions } from '../api';
import './sign-in.css';

const EXPIRED = 'That sign-in attempt expired or was already used. Please try again.';
const FAILED = 'The sign-in could not be verified. Please try again.';

/** The sentence the login page shows for each refusal the single sign-on callback reports (`#oidc-error=…`). */
export const SIGN_IN_REFUSALS: Record<string, string | undefined> = {
  refused_domain: 'Your e-mail domain is not allowed to sign in here.',
  refused_group: 'You are not in a group allowed to sign in here.',
  expired: EXPIRED,
  no_email: 'The provider did not give an e-mail address for your account.',
  email_taken: 'An account with your e-mail already exists here; ask an administrator to link it.',
  disabled: 'Your account is disabled.',
  denied: 'The sign-in was cancelled at the provider.',
  failed: FAILED,
  unavailable: 'Your groups could not be brought up to date, so you were not signed in. Please try again shortly.',
};

export interface SignInState {
  options: LoginOptions | null;
  error: string;
}

/**
 * The login page's single sign-on: the providers to offer and, when the page is the end of a sign-in
 * (`#oidc={handoff}`), the session taken and the browser sent where it was going; `#oidc-error={why}` is shown.
 */
export function useSignInOptions(): SignInState {
  const [options, setOptions] = useState<LoginOptions | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    loginOptions().then(setOptions, () => setOptions({ password_login: true, providers: [] }));
    const hash = location.hash;
    const handoff = /^#oidc=([A-Za-z0-9_-]+)$/.exec(hash)?.[1];
    const refused = /^#oidc-error=([a-z_]+)$/.exec(hash)?.[1];
    if (handoff || refused) history.replaceState(null, '', location.pathname + location.search);
    if (refused) setError(SIGN_IN_REFUSALS[refused] ?? FAILED);
    if (handoff) {
      redeemSignIn(handoff).then(
        (to) => location.replace(to),
        () => setError(EXPIRED),
      );
    }
  }, []);
  return { options, error };
}

export function SignInOptions({ sso }: { sso: SignInState }) {
  const providers = sso.options?.providers ?? [];
  return (
    <>
      {sso.error ? <p role="alert">{sso.error}</p> : null}
      {providers.length > 0 ? (
        <nav className="sso" aria-label="Single sign-on">
          {providers.map((p) => (
            <a
              key={p.id}
              className="sso-button"
              href={`/api/auth/oidc/${encodeURIComponent(p.id)}/start?return_to=%2F`}
            >
              Sign in with {p.label}
            </a>
          ))}
        </nav>
      ) : null}
      {providers.length > 0 && sso.options?.password_login ? <p className="sso-or">or with your password</p> : null}
    </>
  );
}
