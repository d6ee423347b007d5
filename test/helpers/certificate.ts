// A throwaway TLS certificate for a test: self-signed by openssl, valid for a day.
import { execFileSync } from 'node:child_process';

export interface CertificateFiles {
  cert: string;
  key: string;
}

/** Writes a self-signed certificate for `commonName` (and `altNames`, e.g. "DNS:localhost,IP:127.0.0.1") and its key. */
export function selfSignedCertificate(
  files: CertificateFiles,
  commonName = 'localhost',
  altNames?: string,
): CertificateFiles {
  const san = altNames === undefined ? [] : ['-addext', `subjectAltName=${altNames}`];
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      `/CN=${commonName}`,
      ...san,
      '-days',
      '1',
      '-keyout',
      files.key,
      '-out',
      files.cert,
    ],
    { stdio: 'pipe' },
  );
  return files;
}
