import http from 'node:http'
import https from 'node:https'
import { StoreError } from '../../common/errors'
import type { ClusterNode } from '../../cluster/cluster'
import { DumpDecoder, type DumpEnd, type DumpFrame, type DumpFraming } from '../../formats/wire/dump-frames'
import { errorFromResponse } from '../http'
import { storedCodecOf, type StoredCodecRef, type ValuesMode } from '../../formats/wire/stored-values'

/** One streaming request to one node: `GET /admin/stores/<store>/dump/{entries,keys}`. */
export interface NodeDumpRequest {
  readonly store: string
  /** Default: the node's live version. */
  readonly version?: number
  /** Master partitions wanted; default every partition the node holds. */
  readonly partitions?: readonly number[]
  readonly keysOnly?: boolean
  /** 'stored': values as the version stores them (compressed), described by NodeDumpHead.codec. */
  readonly values?: ValuesMode
  /** Only this chunk of the node's version (one run in hash-prefix order). */
  readonly chunk?: number
  readonly framing?: DumpFraming
  /** Per-request limit below the node's own `--stream-max-bytes-per-sec`. */
  readonly maxBytesPerSec?: number
  readonly token?: string
  /** No byte for this long: the stream is given up (RO_UNAVAILABLE). Default 60 s. */
  readonly idleTimeoutMs?: number
  readonly signal?: AbortSignal
}

export interface NodeDumpHead {
  readonly version: number
  readonly keySerializer: string
  readonly valueSerializer: string
  readonly estimatedRecords: number
  /** Chunks of the version on the node. */
  readonly chunks: number
  /** With values 'stored': how they are compressed. */
  readonly codec?: StoredCodecRef
}

export interface NodeDump {
  readonly head: NodeDumpHead
  /** Every frame up to and including the end frame; throws RO_UNAVAILABLE when the stream is cut or does not add up. */
  readonly frames: AsyncGenerator<DumpFrame, DumpEnd>
  /** Raw bytes received so far. */
  readonly received: () => number
}

export function dumpPath(r: NodeDumpRequest): string {
  const q = new URLSearchParams()
  if (r.version !== undefined) q.set('version', String(r.version))
  if (r.partitions !== undefined) q.set('partitions', r.partitions.join(','))
  if (r.chunk !== undefined) q.set('chunk', String(r.chunk))
  q.set('format', r.framing ?? 'binary')
  if (r.maxBytesPerSec !== undefined) q.set('maxBytesPerSec', String(r.maxBytesPerSec))
  if (r.values === 'stored') q.set('values', 'stored')
  return `/admin/stores/${encodeURIComponent(r.store)}/dump/${r.keysOnly ? 'keys' : 'entries'}?${q.toString()}`
}

/** Opens the stream; resolves once the node answered with its headers (errors as StoreErrors with the node's code). */
export function openNodeDump(node: ClusterNode, r: NodeDumpRequest): Promise<NodeDump> {
  const endpoint = `node ${node.id} (${node.host}:${node.port})`
  const send = node.tls === undefined ? http.request : https.request
  return new Promise<NodeDump>((resolve, reject) => {
    const req = send({
      host: node.host,
      port: node.port,
      method: 'GET',
      path: dumpPath(r),
      agent: false,
      ...(node.tls?.ca === undefined ? {} : { ca: node.tls.ca }),
      ...(node.tls?.servername === undefined ? {} : { servername: node.tls.servername }),
      headers: r.token === undefined ? {} : { Authorization: `Bearer ${r.token}` },
      signal: r.signal,
    })
    const idle = r.idleTimeoutMs ?? 60_000
    req.setTimeout(idle, () => req.destroy(new StoreError('RO_UNAVAILABLE', `${endpoint}: dump stream silent for ${idle} ms`)))
    req.on('error', (err) =>
      reject(err instanceof StoreError ? err : new StoreError('RO_UNAVAILABLE', `${endpoint}: ${err.message}`, { cause: err })),
    )
    req.on('response', (res) => {
      if (res.statusCode !== 200) {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.length < 64 && chunks.push(c))
        res.on('end', () =>
          reject(errorFromResponse(endpoint, { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) })),
        )
        res.on('error', (err) => reject(new StoreError('RO_UNAVAILABLE', `${endpoint}: ${err.message}`, { cause: err })))
        return
      }
      const header = (name: string): string => {
        const v = res.headers[name]
        return typeof v === 'string' ? v : ''
      }
      let codec: StoredCodecRef | undefined
      try {
        codec = r.values === 'stored' ? storedCodecOf(res.headers, endpoint) : undefined
      } catch (err) {
        req.destroy()
        return reject(err)
      }
      const head: NodeDumpHead = {
        version: Number(header('x-rostore-version')),
        keySerializer: header('x-rostore-key-serializer'),
        valueSerializer: header('x-rostore-value-serializer'),
        estimatedRecords: Number(header('x-rostore-estimated-records')) || 0,
        chunks: Number(header('x-rostore-chunks')) || 0,
        ...(codec ? { codec } : {}),
      }
      let received = 0
      const decoder = new DumpDecoder(r.framing ?? 'binary')
      async function* frames(): AsyncGenerator<DumpFrame, DumpEnd> {
        try {
          for await (const chunk of res as AsyncIterable<Buffer>) {
            received += chunk.length
            for (const f of decoder.push(chunk)) yield f
          }
        } catch (err) {
          if (err instanceof StoreError) throw err
          throw new StoreError('RO_UNAVAILABLE', `${endpoint}: dump stream failed: ${(err as Error).message}`, { cause: err })
        } finally {
          // Stopped early (an error downstream, a failover): close the connection so the node stops too.
          if (!res.complete) req.destroy()
        }
        const end = decoder.finish()
        if (end.version !== head.version) throw new StoreError('RO_UNAVAILABLE', `${endpoint}: end frame names another version`)
        return end
      }
      resolve({ head, frames: frames(), received: () => received })
    })
    req.end()
  })
}
