import { Webhook } from 'standardwebhooks';
import { createSigningSecret, signWebhook } from './webhook-signature';

describe('signWebhook', () => {
  it('signs as the Standard Webhooks reference library does', () => {
    const secret = createSigningSecret();
    const timestamp = new Date('2026-11-26T00:00:00Z');
    const body = '{"id":9223372036854775807,"name":"x"}';
    const reference = new Webhook(secret).sign('msg_1', timestamp, body);
    expect(signWebhook(secret, 'msg_1', timestamp.getTime() / 1000, body)).toBe(
      reference,
    );
  });

  it('makes secrets of 32 random bytes with the whsec_ prefix', () => {
    const secret = createSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(createSigningSecret()).not.toBe(secret);
  });
});
