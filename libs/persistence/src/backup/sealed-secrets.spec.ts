import { openSecrets, sealSecrets } from './sealed-secrets';

describe('sealed secrets', () => {
  const secrets = { SKALD_SECRETS_KEY: 'k'.repeat(44), SKALD_JWT_SECRET: 'j'.repeat(64) };
  const pass = 'correct horse battery staple';

  it('opens with the passphrase that sealed them, and the file holds no value in clear', () => {
    const sealed = sealSecrets(secrets, pass);
    expect(JSON.stringify(sealed)).not.toContain('kkkk');
    expect(JSON.stringify(sealed)).not.toContain('jjjj');
    expect(openSecrets(JSON.parse(JSON.stringify(sealed)), pass)).toEqual(secrets);
  });

  it('a wrong passphrase or a changed header is refused with a clear error', () => {
    const sealed = sealSecrets(secrets, pass);
    expect(() => openSecrets(sealed, 'not the passphrase at all')).toThrow(/does not open the archive's secrets/);
    expect(() => openSecrets({ ...sealed, kdf: { ...sealed.kdf, N: 2 ** 14 } }, pass)).toThrow(/does not open/);
  });

  it('refuses a short passphrase, a scrypt cost a crafted archive could abuse, and what is not sealed secrets', () => {
    expect(() => sealSecrets(secrets, 'short')).toThrow(/at least 16 characters/);
    const sealed = sealSecrets(secrets, pass);
    expect(() => openSecrets({ ...sealed, kdf: { ...sealed.kdf, N: 2 ** 24 } }, pass)).toThrow(/scrypt cost/);
    expect(() => openSecrets({ format: 'x' }, pass)).toThrow(/not sealed secrets/);
  });
});
