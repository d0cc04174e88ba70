import { useEffect, useState } from 'react';
import { errorText, type Api } from '../api';
import { disable, enable, readState, type PushDeviceState } from './push-device-state';

const DESCRIPTION: Record<PushDeviceState['kind'], string> = {
  checking: 'Checking this device…',
  unsupported: 'This browser cannot receive push notifications (on an iPhone, add Skald to the home screen first).',
  'server-off': 'Push notifications are not set up on this server.',
  blocked: 'Notifications are blocked for this site. Allow them in the browser’s site settings, then enable push here.',
  off: 'Off. Enable to be told on this device when an approval or a question waits, or a job or reply is done.',
  on: 'On. Approvals can be approved or rejected from the notification.',
};

/**
 * "Push notifications on this device": enable (permission, subscription with the server's VAPID
 * key, registered with the server), disable, and the state. Which kinds are pushed, and quiet
 * hours, are the notification settings' `channels.push`.
 */
export function PushDevice({ api }: { api: Api }) {
  const [state, setState] = useState<PushDeviceState>({ kind: 'checking' });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');

  useEffect(() => {
    let live = true;
    readState(api)
      .then((s) => live && setState(s))
      .catch((e: unknown) => live && (setState({ kind: 'off' }), setError(errorText(e))));
    return () => {
      live = false;
    };
  }, [api]);

  const act = (work: () => Promise<PushDeviceState>) => {
    setBusy(true);
    setError('');
    work()
      .then(setState)
      .catch((e: unknown) => setError(errorText(e)))
      .finally(() => setBusy(false));
  };

  return (
    <section aria-labelledby="push-device-h" className="push-device">
      <h3 id="push-device-h">Push notifications on this device</h3>
      <p role="status" className="muted">
        {DESCRIPTION[state.kind]}
      </p>
      {state.kind === 'off' && (
        <button type="button" disabled={busy} onClick={() => act(() => enable(api))}>
          Enable push on this device
        </button>
      )}
      {state.kind === 'on' && (
        <button type="button" disabled={busy} onClick={() => act(() => disable(api, state.subscriptionId))}>
          Disable push on this device
        </button>
      )}
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
    </section>
  );
}
