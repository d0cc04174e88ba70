import { describe, expect, it } from '@jest/globals';
import { deviceLabel, keyBytes } from './push-device-state';

describe('push on this device', () => {
  it('turns the base64url VAPID key into the 65 bytes PushManager.subscribe takes', () => {
    const point = Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 0xfb)]);
    expect(Buffer.from(keyBytes(point.toString('base64url')))).toEqual(point);
  });

  it('labels a device by browser and system, never the whole user agent', () => {
    expect(
      deviceLabel(
        'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Mobile Safari/537.36',
      ),
    ).toBe('Chrome on Android');
    expect(deviceLabel('Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0')).toBe(
      'Firefox on Windows',
    );
    expect(
      deviceLabel(
        'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1',
      ),
    ).toBe('Safari on iOS');
    expect(deviceLabel('curl/8.0')).toBe('A browser');
  });
});
