import { useEffect, useMemo, useState } from 'react';
import { Api, ApiError, forget, login, savedAuth, signOut, type Auth } from './api';
import { SignInOptions, useSignInOptions } from './sign-in/sign-in-options';
import { ChatScreen } from './conversations/chat-screen';
import { Account } from './account/account';
import { NotificationsPage } from './account/notifications-page';
import { ThemeToggle } from './polish/theme';
import { Shortcuts } from './shortcuts/shortcuts-dialog';
import { CronJobs, Tic } from './cron';
import { Admin, adminTabOf } from './admin';
import { Inbox } from './inbox';
import { MyApprovals } from './audit/audit-log';
import { McpServers } from './mcp';
import { SessionView } from './session-view';
import { ReadOnlyConversation } from './history/read-only-conversation';
import { FrameHub } from './conversations/frame-hub';
import { useInboxCount } from './inbox-count/use-inbox-count';

function useHash(): string {
  const [hash, setHash] = useState(location.hash || '#chat');
  useEffect(() => {
    const on = () => setHash(location.hash || '#chat');
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

export function App() {
  const [auth, setAuth] = useState<Auth | null>(savedAuth);
  const [notice, setNotice] = useState('');
  const api = useMemo(() => (auth ? new Api(auth) : null), [auth]);
  const hash = useHash();
  // On a narrow screen the navigation is a menu; going somewhere closes it.
  const [menu, setMenu] = useState(false);
  useEffect(() => setMenu(false), [hash]);
  if (!api || !auth) return <Login onIn={setAuth} notice={notice} />;
  return (
    <Shell api={api} auth={auth} hash={hash} menu={menu} setMenu={setMenu} setAuth={setAuth} setNotice={setNotice} />
  );
}

/** The signed-in page: the top bar (with the inbox's count), the screen the hash names. */
function Shell({
  api,
  auth,
  hash,
  menu,
  setMenu,
  setAuth,
  setNotice,
}: {
  api: Api;
  auth: Auth;
  hash: string;
  menu: boolean;
  setMenu: (f: (m: boolean) => boolean) => void;
  setAuth: (a: Auth | null) => void;
  setNotice: (n: string) => void;
}) {
  const adminTab = adminTabOf(hash);
  // the chat socket's frames reach the top bar too: the inbox count follows the user events
  const hub = useMemo(() => new FrameHub(), []);
  const waiting = useInboxCount(api, hub);
  const badge =
    waiting > 0 ? (
      <span className="badge" aria-label={`${waiting} waiting`}>
        {waiting}
      </span>
    ) : null;
  return (
    <div className="shell">
      <header className="top">
        <h1>Skald</h1>
        <button
          type="button"
          className="menu-toggle secondary"
          aria-expanded={menu}
          aria-controls="main-nav"
          onClick={() => setMenu((m) => !m)}
        >
          Menu {badge}
        </button>
        <nav aria-label="main" id="main-nav" className={menu ? 'open' : undefined}>
          <a href="#chat" aria-current={hash === '#chat' ? 'page' : undefined}>
            Chat
          </a>
          <a href="#inbox" aria-current={hash === '#inbox' || hash === '#approvals' ? 'page' : undefined}>
            Inbox {badge}
          </a>
          <a href="#cron" aria-current={hash === '#cron' ? 'page' : undefined}>
            Jobs
          </a>
          <a href="#mcp" aria-current={hash === '#mcp' ? 'page' : undefined}>
            MCP
          </a>
          <a href="#tic" aria-current={hash === '#tic' ? 'page' : undefined}>
            TIC
          </a>
          <a href="#account" aria-current={hash === '#account' || hash === '#notifications' ? 'page' : undefined}>
            Account
          </a>
          {auth.user.role === 'admin' ? (
            <a href="#admin" aria-current={hash === '#admin' || hash.startsWith('#admin/') ? 'page' : undefined}>
              Admin
            </a>
          ) : null}
        </nav>
        <span className="who">{auth.user.email}</span>
        <ThemeToggle />
        <Shortcuts />
        <button
          type="button"
          onClick={() => {
            signOut();
            setAuth(null);
          }}
        >
          Sign out
        </button>
      </header>
      {hash === '#account' ? (
        <Account
          api={api}
          onSignedOut={(text) => {
            forget();
            setNotice(text);
            setAuth(null);
            location.hash = '#chat';
          }}
        />
      ) : hash === '#notifications' ? (
        <NotificationsPage api={api} />
      ) : hash === '#inbox' ? (
        <Inbox api={api} />
      ) : hash === '#approvals' ? (
        <MyApprovals api={api} />
      ) : hash === '#cron' ? (
        <CronJobs api={api} />
      ) : hash === '#tic' ? (
        <Tic api={api} />
      ) : hash === '#mcp' ? (
        <McpServers api={api} />
      ) : adminTab ? (
        <Admin key={hash} api={api} tab={adminTab} />
      ) : hash.startsWith('#admin/session/') ? (
        <ReadOnlyConversation api={api} id={hash.slice('#admin/session/'.length)} />
      ) : hash.startsWith('#session/') ? (
        <SessionView api={api} id={hash.slice('#session/'.length)} />
      ) : (
        <ChatScreen api={api} source="web" hub={hub} />
      )}
    </div>
  );
}

function Login({ onIn, notice }: { onIn: (a: Auth) => void; notice?: string }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState('');
  const sso = useSignInOptions();
  return (
    <main className="login">
      <h1>Skald</h1>
      <SignInOptions sso={sso} />
      {sso.options && !sso.options.password_login ? null : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            setError('');
            login(email, password).then(onIn, (err: unknown) =>
              setError(
                err instanceof ApiError && err.status === 401
                  ? 'Wrong email or password.'
                  : String((err as Error).message),
              ),
            );
          }}
        >
          <label>
            Email
            <input
              type="email"
              autoComplete="username"
              value={email}
              onChange={(e) => setEmail(e.target.value)}
              required
            />
          </label>
          <label>
            Password
            <input
              type="password"
              autoComplete="current-password"
              value={password}
              onChange={(e) => setPassword(e.target.value)}
              required
            />
          </label>
          {notice ? <p role="status">{notice}</p> : null}
          {error ? <p role="alert">{error}</p> : null}
          <button type="submit">Sign in</button>
        </form>
      )}
    </main>
  );
}
