import { describe, expect, it } from '@jest/globals';
import type { PushMessage } from '@skald/contracts/push-message';
import { ACTION_PATH, actionRequest, notificationFor } from './notify';

const approval: PushMessage = {
  kind: 'approval',
  title: 'Approve execute_cmd?',
  body: 'npm publish',
  url: '/#inbox',
  tag: 'approval:1',
  action_token: 'tok.sig',
};

describe('the notification of a push message', () => {
  it('an approval with a token offers Approve and Reject and stays until answered', () => {
    const n = notificationFor(approval);
    expect(n.title).toBe('Approve execute_cmd?');
    expect(n.options.actions?.map((a) => a.title)).toEqual(['Approve', 'Reject']);
    expect(n.options.requireInteraction).toBe(true);
    expect(n.options.tag).toBe('approval:1');
  });

  it('once decided, the same tag says what was decided, with no buttons', () => {
    const n = notificationFor({ ...approval, action_token: undefined }, 'approve');
    expect(n.title).toBe('Approved: Approve execute_cmd?');
    expect(n.options.actions).toBeUndefined();
    expect(n.options.tag).toBe('approval:1');
  });

  it('a finished turn has no buttons and does not stay', () => {
    const n = notificationFor({ kind: 'turn', title: 'Done', body: 'x', url: '/', tag: 't' });
    expect(n.options.actions).toBeUndefined();
    expect(n.options.requireInteraction).toBe(false);
  });
});

describe('an action button', () => {
  const data = { message: approval, url: approval.url };

  it('posts exactly the token and the action, with no cookies', () => {
    const r = actionRequest(data, 'reject')!;
    expect(r.url).toBe(ACTION_PATH);
    expect(JSON.parse(r.init.body as string)).toEqual({ token: 'tok.sig', action: 'reject' });
    expect(r.init.credentials).toBe('omit');
  });

  it('a tap on the body, an unknown action or a message without a token posts nothing', () => {
    expect(actionRequest(data, '')).toBeNull();
    expect(actionRequest(data, 'session')).toBeNull();
    expect(actionRequest({ ...data, message: { ...approval, action_token: undefined } }, 'approve')).toBeNull();
  });
});
