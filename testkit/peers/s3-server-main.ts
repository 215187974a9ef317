/**
 * The S3 server process of the tests and benchmarks (started by s3-server.ts): s3rver,
 * a Node S3 implementation that checks Signature Version 4 (headers and presigned query)
 * with the key pair it is given, on loopback. Requests that carry no signature at all are
 * refused (403 AccessDenied), as a private bucket on S3 refuses them; s3rver alone would
 * serve them. Prints `{"port": N}` on stdout once it listens.
 *
 * Environment: S3_DIR (its storage), S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_BUCKETS
 * (comma-separated buckets to create), S3_EXTRA_KEYS (more key pairs, `id:secret,...`, so
 * that a test can give each process its own), S3_LOG (a file that gets one JSON line per
 * finished request: method, path, Range header, access key id, status, body bytes sent).
 */
import { appendFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'

interface S3rverApp {
  callback(): http.RequestListener
  configureBuckets(): Promise<void>
}
type S3rverClass = new (o: Record<string, unknown>) => S3rverApp
interface Account {
  createKeyPair(id: string, secret: string): void
}
type AccountClass = (new (id: number, name: string) => Account) & { DUMMY_ACCOUNT: { revokeAccessKey(id: string): void } }

// eslint-disable-next-line @typescript-eslint/no-require-imports
const S3rver = require('@20minutes/s3rver') as S3rverClass
// eslint-disable-next-line @typescript-eslint/no-require-imports
const AWSAccount = require('@20minutes/s3rver/lib/models/account') as AccountClass

async function main(): Promise<void> {
  const env = process.env
  const keyId = env['S3_ACCESS_KEY_ID']
  const secret = env['S3_SECRET_ACCESS_KEY']
  const dir = env['S3_DIR']
  if (!keyId || !secret || !dir) throw new Error('S3_DIR, S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY are required')
  // Only the key pair given is known: the built-in S3RVER/S3RVER one is revoked.
  AWSAccount.DUMMY_ACCOUNT.revokeAccessKey('S3RVER')
  const account = new AWSAccount(123456789012, 'rostore-test')
  account.createKeyPair(keyId, secret)
  for (const pair of (env['S3_EXTRA_KEYS'] ?? '').split(',').filter((p) => p !== '')) {
    const colon = pair.indexOf(':')
    account.createKeyPair(pair.slice(0, colon), pair.slice(colon + 1))
  }
  const log = env['S3_LOG']
  const buckets = (env['S3_BUCKETS'] ?? '').split(',').filter((b) => b !== '')
  const app = new S3rver({ directory: dir, silent: true, configureBuckets: buckets.map((name) => ({ name, configs: [] })) })
  await app.configureBuckets()
  const handle = app.callback()
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    if (req.headers['authorization'] === undefined && !url.searchParams.has('X-Amz-Algorithm') && !url.searchParams.has('Signature')) {
      res.writeHead(403, { 'content-type': 'application/xml', 'x-amz-error-code': 'AccessDenied' })
      res.end('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>')
      return
    }
    if (log !== undefined) logRequest(log, req, res, url)
    handle(req, res)
  })
  server.keepAliveTimeout = 30_000
  await new Promise<void>((resolve) => server.listen(Number(env['S3_PORT'] ?? 0), '127.0.0.1', resolve))
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`)
  process.on('SIGTERM', () => server.close(() => process.exit(0)))
}

/** Counts the body bytes of the answer and appends the request's line to the log once it is over. */
function logRequest(log: string, req: http.IncomingMessage, res: http.ServerResponse, url: URL): void {
  let bytes = 0
  const write = res.write.bind(res) as (...a: unknown[]) => boolean
  const end = res.end.bind(res) as (...a: unknown[]) => http.ServerResponse
  const count = (chunk: unknown): void => {
    if (typeof chunk === 'string') bytes += Buffer.byteLength(chunk)
    else if (chunk instanceof Uint8Array) bytes += chunk.length
  }
  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    count(chunk)
    return write(chunk, ...rest)
  }) as typeof res.write
  res.end = ((chunk?: unknown, ...rest: unknown[]) => {
    if (typeof chunk !== 'function') count(chunk)
    return end(chunk, ...rest)
  }) as typeof res.end
  const credential =
    /Credential=([^/,\s]+)\//.exec(req.headers['authorization'] ?? '')?.[1] ?? url.searchParams.get('X-Amz-Credential')?.split('/')[0]
  res.once('close', () => {
    const line = {
      method: req.method,
      path: url.pathname,
      range: req.headers['range'] ?? null,
      keyId: credential ?? null,
      status: res.statusCode,
      bytes,
    }
    appendFileSync(log, `${JSON.stringify(line)}\n`)
  })
}

main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`)
  process.exit(1)
})
