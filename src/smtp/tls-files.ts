// The operator's STARTTLS certificate and key (ROOST_SMTP_TLS_CERT, ROOST_SMTP_TLS_KEY),
// read at start and again whenever either file changes, so that a renewed certificate
// (certbot, cert-manager) is served without a restart. A pair that does not load — a
// renewal caught half-written — is logged and the previous one kept.
import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { Logger } from 'pino';

export interface TlsPair {
  cert: Buffer;
  key: Buffer;
}

export interface TlsFiles {
  current(): TlsPair;
  onChange(listener: (pair: TlsPair) => void): void;
  stop(): void;
}

function load(certPath: string, keyPath: string): TlsPair {
  const pair = { cert: readFileSync(certPath), key: readFileSync(keyPath) };
  createSecureContext(pair); // throws when the two do not make a usable pair
  return pair;
}

/** Loads the pair (throws at start when it does not load) and polls both files for changes. */
export function watchTlsFiles(
  certPath: string,
  keyPath: string,
  intervalMs: number,
  log: Pick<Logger, 'warn'>,
): TlsFiles {
  let pair = load(certPath, keyPath);
  const listeners: Array<(pair: TlsPair) => void> = [];
  const reload = () => {
    try {
      const next = load(certPath, keyPath);
      if (next.cert.equals(pair.cert) && next.key.equals(pair.key)) return;
      pair = next;
      for (const listener of listeners) listener(pair);
    } catch (err) {
      log.warn({ err }, 'SMTP TLS certificate or key did not load; still serving the previous one');
    }
  };
  // Polling (stat), not fs.watch: renewals replace files by rename, which fs.watch loses track of.
  const options = { interval: intervalMs, persistent: false };
  watchFile(certPath, options, reload);
  watchFile(keyPath, options, reload);
  return {
    current: () => pair,
    onChange: (listener) => listeners.push(listener),
    stop: () => {
      unwatchFile(certPath, reload);
      unwatchFile(keyPath, reload);
    },
  };
}
