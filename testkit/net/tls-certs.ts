import { execFileSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** PEM files of a throwaway CA and of a node certificate it signed. */
export interface TestCertificates {
  readonly caFile: string
  readonly certFile: string
  readonly keyFile: string
  readonly ca: Buffer
  readonly cert: Buffer
  readonly key: Buffer
}

/**
 * A fresh CA and a node certificate for 127.0.0.1 and localhost (P-256 keys, valid two
 * days), made with the openssl CLI in `dir`: real certificates for real TLS handshakes in
 * tests, generated at test time, never checked in.
 */
export function makeTestCertificates(dir: string, name = 'node'): TestCertificates {
  mkdirSync(dir, { recursive: true })
  const f = (n: string): string => join(dir, n)
  const ssl = (...args: string[]): void => void execFileSync('openssl', args, { stdio: 'pipe' })
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  ssl(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    f(`${name}-ca.key`),
    '-out',
    f(`${name}-ca.pem`),
    '-days',
    '2',
    '-subj',
    `/CN=rostore test CA ${name}`,
  )
  ssl('req', ...ec, '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`), '-subj', `/CN=rostore ${name}`)
  writeFileSync(
    f(`${name}.ext`),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n',
  )
  ssl(
    'x509',
    '-req',
    '-in',
    f(`${name}.csr`),
    '-CA',
    f(`${name}-ca.pem`),
    '-CAkey',
    f(`${name}-ca.key`),
    '-CAcreateserial',
    '-out',
    f(`${name}.pem`),
    '-days',
    '2',
    '-extfile',
    f(`${name}.ext`),
  )
  return {
    caFile: f(`${name}-ca.pem`),
    certFile: f(`${name}.pem`),
    keyFile: f(`${name}.key`),
    ca: readFileSync(f(`${name}-ca.pem`)),
    cert: readFileSync(f(`${name}.pem`)),
    key: readFileSync(f(`${name}.key`)),
  }
}
