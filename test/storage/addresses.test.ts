// Addresses, their credentials, view tokens and senders at the Storage interface of every
// engine: the same calls give the same records and outcomes on each.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Storage, ViewTokenRecord } from '../../src/storage/storage.js';
import { forEachStorage } from '../helpers/storage.js';
import { addressRecord, appendInput, senderRecord } from '../helpers/records.js';

const HOUR = 3_600_000;

async function stored(storage: Storage, overrides: Parameters<typeof addressRecord>[0] = {}) {
  const address = addressRecord(overrides);
  assert.equal(await storage.insertAddress(address), 'ok');
  return address;
}

function viewToken(addressId: string, overrides: Partial<ViewTokenRecord> = {}): ViewTokenRecord {
  return {
    id: `vt_${Math.random().toString(36).slice(2)}`,
    addressId,
    tokenDigest: Math.random().toString(16).slice(2).padEnd(64, '0'),
    label: null,
    createdAt: Date.now(),
    expiresAt: null,
    ...overrides,
  };
}

await forEachStorage('addresses', (storage) => {
  test('insert, then read by id and by slug: the record as it was given', async () => {
    const address = await stored(storage(), { taskId: 'task-1', expiresAt: Date.now() + HOUR });
    assert.deepEqual(await storage().getAddress(address.id, Date.now()), address);
    assert.deepEqual(await storage().getAddressBySlug(address.slug, Date.now()), address);
    assert.equal(await storage().getAddress('addr_unknown', Date.now()), null);
    assert.equal(await storage().getAddressBySlug('no-such-slug', Date.now()), null);
  });

  test('look-ups made together each see the address as it stands at their own time', async () => {
    const now = Date.now();
    const expiring = await stored(storage(), { expiresAt: now + 1000 });
    const lasting = await stored(storage());
    // Asked in one turn: PostgreSQL answers them with one statement.
    const found = await Promise.all([
      storage().getAddress(expiring.id, now),
      storage().getAddress(expiring.id, now + 1000),
      storage().getAddress('addr_unknown', now),
      storage().getAddress(lasting.id, now + 1000),
      storage().getAddress(expiring.id, now + 999),
    ]);
    assert.deepEqual(
      found.map((address) => address?.id ?? null),
      [expiring.id, null, null, lasting.id, expiring.id],
    );
  });

  test('a slug read again finds the address as it stands: changed, expired, deleted, then another with the slug', async () => {
    const now = Date.now();
    const address = await stored(storage());
    assert.deepEqual(await storage().getAddressBySlug(address.slug, now), address);
    const renamed = await storage().updateAddress(address.id, { name: 'Renamed', expiresAt: now + HOUR }, now);
    assert.deepEqual(await storage().getAddressBySlug(address.slug, now), renamed);
    assert.equal(await storage().getAddressBySlug(address.slug, now + HOUR), null);
    assert.equal(await storage().putSender(senderRecord(address.id), now), true);
    assert.equal((await storage().getAddressBySlug(address.slug, now))?.hasSender, true);
    assert.equal(await storage().deleteAddress(address.id), true);
    assert.equal(await storage().getAddressBySlug(address.slug, now), null);
    const successor = await stored(storage(), { slug: address.slug });
    assert.deepEqual(await storage().getAddressBySlug(address.slug, now), successor);
  });

  test('a slug already taken is reported, not thrown', async () => {
    const address = await stored(storage());
    assert.equal(await storage().insertAddress(addressRecord({ slug: address.slug })), 'slug_taken');
  });

  test('an expired address is not found by id or slug, and cannot be changed', async () => {
    const now = Date.now();
    const address = await stored(storage(), { expiresAt: now + 1000 });
    assert.equal(await storage().getAddress(address.id, now + 1000), null);
    assert.equal(await storage().getAddressBySlug(address.slug, now + 1000), null);
    assert.equal(await storage().updateAddress(address.id, { name: 'x' }, now + 1000), null);
    assert.equal(
      await storage().replaceReadToken({
        id: address.id,
        digest: 'c'.repeat(64),
        now: now + 1000,
        revokeViewTokens: false,
      }),
      null,
    );
    assert.equal(
      await storage().replaceIngressSecret({
        id: address.id,
        digest: 'c'.repeat(64),
        previousUntil: null,
        now: now + 1000,
      }),
      null,
    );
    assert.equal(await storage().putSender(senderRecord(address.id), now + 1000), false);
  });

  test('update changes only the fields given; null clears taskId and expiresAt', async () => {
    const address = await stored(storage(), { taskId: 't', expiresAt: Date.now() + HOUR });
    const renamed = await storage().updateAddress(address.id, { name: 'Renamed' }, Date.now());
    assert.deepEqual(renamed, { ...address, name: 'Renamed' });
    const cleared = await storage().updateAddress(address.id, { taskId: null, expiresAt: null }, Date.now());
    assert.deepEqual(cleared, { ...address, name: 'Renamed', taskId: null, expiresAt: null });
    assert.deepEqual(await storage().getAddress(address.id, Date.now()), cleared);
  });

  test('the read token and the inbox secret are replaced; the previous secret stays until the given time', async () => {
    const address = await stored(storage());
    const now = Date.now();
    const read = await storage().replaceReadToken({
      id: address.id,
      digest: 'd'.repeat(64),
      now,
      revokeViewTokens: false,
    });
    assert.equal(read?.readTokenDigest, 'd'.repeat(64));
    const graced = await storage().replaceIngressSecret({
      id: address.id,
      digest: 'e'.repeat(64),
      previousUntil: now + HOUR,
      now,
    });
    assert.equal(graced?.ingressSecretDigest, 'e'.repeat(64));
    assert.equal(graced?.previousIngressDigest, address.ingressSecretDigest);
    assert.equal(graced?.previousIngressUntil, now + HOUR);
    const abrupt = await storage().replaceIngressSecret({
      id: address.id,
      digest: 'f'.repeat(64),
      previousUntil: null,
      now,
    });
    assert.equal(abrupt?.previousIngressDigest, null);
    assert.equal(abrupt?.previousIngressUntil, null);
    assert.deepEqual(await storage().getAddress(address.id, now), abrupt);
  });

  test('replacing the read token with revokeViewTokens deletes the view tokens; without it they stay', async () => {
    const now = Date.now();
    const kept = await stored(storage());
    const keptToken = viewToken(kept.id, { createdAt: now - 10 });
    assert.equal(await storage().insertViewToken(keptToken, 5, now), 'ok');
    const revoked = await stored(storage());
    const revokedTokens = [
      viewToken(revoked.id, { createdAt: now - 10 }),
      viewToken(revoked.id, { createdAt: now - 5 }),
    ];
    for (const token of revokedTokens) assert.equal(await storage().insertViewToken(token, 5, now), 'ok');

    const same = await storage().replaceReadToken({
      id: kept.id,
      digest: 'a'.repeat(64),
      now,
      revokeViewTokens: false,
    });
    assert.equal(same?.readTokenDigest, 'a'.repeat(64));
    assert.deepEqual(await storage().listViewTokens(kept.id, now), [keptToken]);
    assert.deepEqual(await storage().findViewToken(kept.id, keptToken.tokenDigest, now), keptToken);

    const cleared = await storage().replaceReadToken({
      id: revoked.id,
      digest: 'b'.repeat(64),
      now,
      revokeViewTokens: true,
    });
    assert.equal(cleared?.readTokenDigest, 'b'.repeat(64));
    assert.deepEqual(await storage().listViewTokens(revoked.id, now), []);
    for (const token of revokedTokens)
      assert.equal(await storage().findViewToken(revoked.id, token.tokenDigest, now), null);
    // Only that address's tokens went.
    assert.deepEqual(await storage().listViewTokens(kept.id, now), [keptToken]);
    // The freed places count again: the limit sees none of the deleted tokens.
    assert.equal(await storage().insertViewToken(viewToken(revoked.id), 1, now), 'ok');
  });

  test('replaceReadToken on an unknown address is null and deletes nothing', async () => {
    const now = Date.now();
    const address = await stored(storage());
    const token = viewToken(address.id);
    assert.equal(await storage().insertViewToken(token, 5, now), 'ok');
    assert.equal(
      await storage().replaceReadToken({ id: 'addr_unknown', digest: 'c'.repeat(64), now, revokeViewTokens: true }),
      null,
    );
    assert.deepEqual(await storage().listViewTokens(address.id, now), [token]);
  });

  test('delete removes the address with its events, tokens and sender; a second delete finds nothing', async () => {
    const address = await stored(storage());
    await storage().appendEvent({ event: appendInput(address.id), capacity: 10 });
    await storage().insertViewToken(viewToken(address.id), 5, Date.now());
    await storage().putSender(senderRecord(address.id), Date.now());
    assert.equal(await storage().deleteAddress(address.id), true);
    assert.equal(await storage().getAddress(address.id, Date.now()), null);
    assert.deepEqual((await storage().listEvents({ addressId: address.id, after: 0, limit: 10 })).events, []);
    assert.deepEqual(await storage().listViewTokens(address.id, Date.now()), []);
    assert.equal(await storage().getSender(address.id), null);
    assert.equal(await storage().deleteAddress(address.id), false);
  });
});

await forEachStorage('view tokens', (storage) => {
  test('at most `max` live tokens; an expired one makes room; an unknown address is said so', async () => {
    const address = await stored(storage());
    const now = Date.now();
    const first = viewToken(address.id, { createdAt: now - 2, expiresAt: now + 10, label: 'soon' });
    const second = viewToken(address.id, { createdAt: now - 1 });
    assert.equal(await storage().insertViewToken(first, 2, now), 'ok');
    assert.equal(await storage().insertViewToken(second, 2, now), 'ok');
    assert.equal(await storage().insertViewToken(viewToken(address.id), 2, now), 'limit');
    assert.equal(await storage().insertViewToken(viewToken(address.id), 2, now + 10), 'ok');
    assert.equal(await storage().insertViewToken(viewToken('addr_unknown'), 2, now), 'address_not_found');
  });

  test('list (oldest first, unexpired), find by digest, delete', async () => {
    const address = await stored(storage());
    const now = Date.now();
    const older = viewToken(address.id, { createdAt: now - 5, label: 'ci' });
    const newer = viewToken(address.id, { createdAt: now - 1, expiresAt: now + HOUR });
    const expired = viewToken(address.id, { createdAt: now - 9, expiresAt: now });
    for (const token of [newer, expired, older])
      assert.equal(await storage().insertViewToken(token, 10, now - 10), 'ok');
    assert.deepEqual(await storage().listViewTokens(address.id, now), [older, newer]);
    assert.deepEqual(await storage().findViewToken(address.id, newer.tokenDigest, now), newer);
    assert.equal(await storage().findViewToken(address.id, expired.tokenDigest, now), null);
    assert.equal(await storage().findViewToken('addr_other', newer.tokenDigest, now), null);
    assert.equal(await storage().deleteViewToken(address.id, newer.id), true);
    assert.equal(await storage().deleteViewToken(address.id, newer.id), false);
    assert.deepEqual(await storage().listViewTokens(address.id, now), [older]);
  });
});

await forEachStorage('senders', (storage) => {
  test('put, replace, get, delete; the address says whether it has one', async () => {
    const address = await stored(storage());
    const now = Date.now();
    assert.equal(await storage().getSender(address.id), null);
    const first = senderRecord(address.id, { optionsJson: '{"header":"x-sig"}', sealedVerifyToken: 'sealed:v' });
    assert.equal(await storage().putSender(first, now), true);
    assert.deepEqual(await storage().getSender(address.id), first);
    assert.equal((await storage().getAddress(address.id, now))?.hasSender, true);
    const second = senderRecord(address.id, {
      provider: 'stripe',
      enforce: false,
      secretCount: 2,
      toleranceSeconds: 60,
    });
    assert.equal(await storage().putSender(second, now), true);
    assert.deepEqual(await storage().getSender(address.id), second);
    assert.equal(await storage().deleteSender(address.id), true);
    assert.equal(await storage().deleteSender(address.id), false);
    assert.equal(await storage().getSender(address.id), null);
    assert.equal((await storage().getAddress(address.id, now))?.hasSender, false);
    assert.equal(await storage().putSender(senderRecord('addr_unknown'), now), false);
  });
});
