import { readFile } from 'node:fs/promises'
import http from 'node:http'
import https from 'node:https'
import { createSecureContext } from 'node:tls'
import { errorMessage, StoreError } from '../common/errors'

/**
 * TLS for the node's one HTTP listener (`--tls-cert`, `--tls-key`): when set, reads and
 * admin calls alike are HTTPS on the node's port, so the admin token never crosses the
 * network in clear and no plain-HTTP port is left to send it to by mistake. (docs/API.md,
 * "TLS".)
 */
export interface NodeTlsOptions {
  /** PEM certificate chain, the node's certificate first. */
  readonly cert: string | Buffer
  /** PEM private key of that certificate. */
  readonly key: string | Buffer
}

/** The node's listener: node:http, or node:https with the same options when TLS is on. */
export type NodeServer = http.Server | https.Server

/** Refused TLS settings: the key does not match the certificate, a file is not PEM... */
function checkTls(tls: NodeTlsOptions, where: string): NodeTlsOptions {
  try {
    createSecureContext({ cert: tls.cert, key: tls.key })
  } catch (err) {
    throw new StoreError('RO_BAD_OPTION', `${where}: not a usable certificate and key: ${errorMessage(err)}`, { cause: err })
  }
  return tls
}

/** Reads and checks the PEM files of `--tls-cert` and `--tls-key` (RO_BAD_OPTION naming the file). */
export async function loadTlsFiles(certFile: string, keyFile: string): Promise<NodeTlsOptions> {
  const read = async (file: string, what: string): Promise<Buffer> => {
    try {
      return await readFile(file)
    } catch (err) {
      throw new StoreError('RO_BAD_OPTION', `cannot read the TLS ${what} file ${file}: ${errorMessage(err)}`, { cause: err })
    }
  }
  const [cert, key] = await Promise.all([read(certFile, 'certificate'), read(keyFile, 'key')])
  return checkTls({ cert, key }, `${certFile} and ${keyFile}`)
}

/**
 * The node's server. With TLS, a client has as long to finish its handshake as to send
 * its headers (`handshakeTimeoutMs`), so a connection that never completes one is cut as
 * soon as a slow-loris one is; TLS 1.2 is the oldest accepted.
 */
export function createNodeServer(options: http.ServerOptions, tls: NodeTlsOptions | undefined, handshakeTimeoutMs: number): NodeServer {
  if (tls === undefined) return http.createServer(options)
  checkTls(tls, 'tls')
  return https.createServer({ ...options, cert: tls.cert, key: tls.key, minVersion: 'TLSv1.2', handshakeTimeout: handshakeTimeoutMs })
}

/** Certificate rotation without a restart: new connections use the new files, open ones keep theirs. */
export async function reloadTls(server: NodeServer, certFile: string, keyFile: string): Promise<void> {
  if (!(server instanceof https.Server)) throw new StoreError('RO_BAD_OPTION', 'the node does not serve TLS')
  const tls = await loadTlsFiles(certFile, keyFile)
  server.setSecureContext({ cert: tls.cert, key: tls.key })
}
