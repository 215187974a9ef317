import type { Agent } from 'node:http'
import { StoreError } from '../common/errors'
import type { NodeAddress } from '../cluster/address-book'
import type { ClusterNode } from '../cluster/cluster'
import { decodeValuesPartial, encodeKeys } from '../formats/wire/multiget'
import { storedCodecOf, type StoredCodecRef, type ValuesMode } from '../formats/wire/stored-values'
import { xxh64Hex } from '../formats/store/chunk/checksum'
import { errorFromResponse, httpRequest, nodeAgent, type HttpResponse } from './http'
import type { Outcome, RemoteDecisions, RemoteLease, RemotePrepared, RemoteVote } from './push/remote-answers'

import type { VersionManifest } from '../formats/store/layout/partition-files'
export type { Outcome, RemoteDecisions, RemoteLease, RemotePrepared, RemoteVote } from './push/remote-answers'

/** What a node says about one of its stores (GET /stores/<store>). */
export interface RemoteStoreInfo {
  readonly store: string
  readonly version: number
  readonly nodeId: number
  readonly replication: number
  readonly keySerializer: 'string' | 'bytes'
  readonly valueSerializer: 'string' | 'json' | 'bytes' | 'mixed'
  readonly keyHash: string
  readonly layout: readonly { readonly id: number; readonly partitions: readonly number[] }[]
  /** Where the nodes of `layout` listen, from the answering node's address book (absent from older nodes). */
  readonly nodes?: readonly RemoteNodeAddress[]
  readonly stale: boolean
}

export interface RemoteNodeAddress {
  readonly id: number
  readonly host: string
  readonly port: number
  readonly respPort?: number
}

export interface RemoteVersion {
  readonly version: number
  readonly live: boolean
  readonly sizeBytes?: number
  readonly records?: number
  readonly createdAt?: string
  /** The version's ring (absent from older nodes). */
  readonly layout?: readonly { readonly id: number; readonly partitions: readonly number[] }[]
  readonly replication?: number
  readonly formatMajor?: number
  readonly [k: string]: unknown
}

export interface RemoteJob {
  readonly id: string
  readonly kind?: string
  readonly store?: string
  readonly state: 'running' | 'succeeded' | 'failed' | 'cancelled'
  readonly progress?: {
    readonly bytesDone?: number
    readonly bytesTotal?: number
    readonly rateBytesPerSec?: number
    readonly etaSeconds?: number
  }
  readonly result?: { readonly version?: number; readonly [k: string]: unknown }
  readonly error?: { readonly code: string; readonly message: string }
}

/** What a push (or rollback) decided, as each node keeps it (docs/API.md, push records). */
export interface RemotePushRecord {
  readonly version: number
  readonly missed: readonly number[]
  readonly source?: string
  readonly seq: number
  readonly at: string
  readonly holders?: readonly number[]
  readonly partitioned?: boolean
}

/** A value as the version stores it: `codec` says how it is compressed (undefined when the key is absent). */
export interface StoredGet {
  readonly value: Buffer | undefined
  readonly version: number
  readonly codec: StoredCodecRef | undefined
}

/** Values as the version stores them, all compressed as `codec` says. */
export interface StoredGetMany {
  readonly values: (Buffer | undefined)[]
  readonly version: number
  readonly codec: StoredCodecRef | undefined
}

export interface NodeClientOptions {
  readonly timeoutMs?: number
  readonly adminToken?: string
  /** Largest response taken; default 64 MiB (a node's default --max-response-bytes). */
  readonly maxResponseBytes?: number
  /** Sent as the bearer token of read requests, when the nodes require one. */
  readonly readToken?: string
}

/** The reads the routing client makes of one node, over HTTP (NodeClient) or RESP (RespNodeClient). */
export interface NodeReads {
  readonly endpoint: string
  get(store: string, key: Uint8Array | string): Promise<{ value: Buffer | undefined; version: number }>
  getMany(store: string, keys: readonly (Uint8Array | string)[]): Promise<{ values: (Buffer | undefined)[]; version: number }>
  close(): void
}

/**
 * Typed calls to one rostore node (docs/API.md). Reads return undefined for absent keys;
 * every failure is a StoreError: RO_UNAVAILABLE for connection errors, timeouts and 5xx,
 * the node's own code otherwise.
 */
/**
 * The body of `POST /admin/stores/<s>/fetch` (docs/API.md). With `fetchFrom`, `peers` or
 * `manifest`, a format-2 fetch by partition: peers are node ids the node resolves itself.
 */
export interface RemoteFetchBody {
  readonly source?: string
  readonly version?: number
  readonly maxBytesPerSec?: number
  readonly lease?: string
  readonly swap?: boolean
  readonly fetchFrom?: 'auto' | 'source' | 'peers'
  readonly peers?: readonly { readonly nodeId: number; readonly version?: number; readonly partitions?: readonly number[] }[]
  readonly manifest?: VersionManifest
}

export class NodeClient implements NodeReads {
  readonly endpoint: string
  private readonly agent: Agent
  private readonly timeoutMs: number

  /** Speaks HTTPS when `node.tls` is set (clusterWithTls). */
  constructor(
    readonly node: ClusterNode,
    private readonly opts: NodeClientOptions = {},
  ) {
    this.agent = nodeAgent(node.tls, 16)
    this.endpoint = `node ${node.id} (${node.host}:${node.port})`
    this.timeoutMs = opts.timeoutMs ?? 5000
  }

  /** The value (undefined when absent) and the store version that answered. */
  async get(store: string, key: Uint8Array | string): Promise<{ value: Buffer | undefined; version: number }> {
    const { value, version } = await this.getAs(store, key, 'plain')
    return { value, version }
  }

  /**
   * get() of the value as the version stores it (`?values=stored`, docs/API.md "Compressed
   * values"), with how it is compressed: `codec` is undefined only when the key is absent.
   */
  async getStored(store: string, key: Uint8Array | string): Promise<StoredGet> {
    return this.getAs(store, key, 'stored')
  }

  private async getAs(store: string, key: Uint8Array | string, mode: ValuesMode): Promise<StoredGet> {
    const query = mode === 'stored' ? '?values=stored' : ''
    const path = `/stores/${encodeURIComponent(store)}/keys/${percentEncode(key)}${query}`
    const res = await this.call('GET', path, undefined, this.readHeaders())
    if (res.status === 404 && res.body.length === 0 && res.headers[VERSION_HEADER] !== undefined)
      return { value: undefined, version: versionOf(res), codec: undefined }
    if (res.status !== 200) throw errorFromResponse(this.endpoint, res)
    return { value: res.body, version: versionOf(res), codec: mode === 'stored' ? storedCodecOf(res.headers, this.endpoint) : undefined }
  }

  /** The live version's zstd dictionary (`GET /stores/<store>/dictionary`), checked against the checksum the node names. */
  async dictionary(store: string): Promise<{ bytes: Buffer; checksum: string; version: number }> {
    const res = await this.call('GET', `/stores/${encodeURIComponent(store)}/dictionary`, undefined, this.readHeaders())
    return this.checkedDictionary(store, res)
  }

  /**
   * Values in key order and the version that answered. A node stops a response at its
   * byte limit (docs/API.md, multi-get); the keys it did not answer are asked for again,
   * and if a swap came in between the whole list is read again from one version.
   */
  async getMany(store: string, keys: readonly (Uint8Array | string)[]): Promise<{ values: (Buffer | undefined)[]; version: number }> {
    const { values, version } = await this.getManyAs(store, keys, 'plain')
    return { values, version }
  }

  /** getMany() of values as the version stores them (see getStored). */
  async getManyStored(store: string, keys: readonly (Uint8Array | string)[]): Promise<StoredGetMany> {
    return this.getManyAs(store, keys, 'stored')
  }

  private async getManyAs(store: string, keys: readonly (Uint8Array | string)[], mode: ValuesMode): Promise<StoredGetMany> {
    for (let attempt = 1; ; attempt++) {
      const values: (Buffer | undefined)[] = []
      let version: number | undefined
      for (let at = 0; ;) {
        const page = await this.multiGet(store, at === 0 ? keys : keys.slice(at), mode)
        if (version !== undefined && page.version !== version) break
        version = page.version
        values.push(...page.values)
        at += page.values.length
        if (!page.truncated) return { values, version, codec: page.codec }
        if (page.values.length === 0) {
          throw new StoreError('RO_TOO_LARGE', `${this.endpoint}: a value is larger than the node's response limit`)
        }
      }
      if (attempt >= 3)
        throw new StoreError('RO_UNAVAILABLE', `${this.endpoint}: the store version changed during every attempt of a long multi-get`)
    }
  }

  private async multiGet(
    store: string,
    keys: readonly (Uint8Array | string)[],
    mode: ValuesMode,
  ): Promise<{ values: (Buffer | undefined)[]; truncated: boolean; version: number; codec: StoredCodecRef | undefined }> {
    // A read: safe to send again when the connection was reset.
    const res = await this.call(
      'POST',
      `/stores/${encodeURIComponent(store)}/multi-get${mode === 'stored' ? '?values=stored' : ''}`,
      encodeKeys(keys),
      { 'Content-Type': 'application/octet-stream', ...this.readHeaders() },
      true,
    )
    if (res.status !== 200) throw errorFromResponse(this.endpoint, res)
    const codec = mode === 'stored' ? storedCodecOf(res.headers, this.endpoint) : undefined
    return { ...decodeValuesPartial(res.body, keys.length), version: versionOf(res), codec }
  }

  /**
   * The zstd dictionary of a version the node holds, for a dump of stored values (`GET
   * /admin/stores/<s>/dump/dictionary`, the admin token or, where reads are protected, the
   * read token); checked against the checksum the node names.
   */
  async dumpDictionary(store: string, version: number): Promise<{ bytes: Buffer; checksum: string }> {
    if (!this.opts.adminToken)
      throw new StoreError('RO_UNAUTHORIZED', `${this.endpoint}: no admin token (give --admin-token or set ROSTORE_ADMIN_TOKEN)`)
    const path = `/admin/stores/${encodeURIComponent(store)}/dump/dictionary?version=${version}`
    const res = await this.call('GET', path, undefined, { Authorization: `Bearer ${this.opts.adminToken}` })
    return this.checkedDictionary(store, res)
  }

  private async checkedDictionary(store: string, res: HttpResponse): Promise<{ bytes: Buffer; checksum: string; version: number }> {
    if (res.status !== 200) throw errorFromResponse(this.endpoint, res)
    const ref = storedCodecOf(res.headers, this.endpoint)
    if (ref.dictionary === undefined) throw new StoreError('RO_BAD_FORMAT', `${this.endpoint}: a dictionary without its checksum`)
    if ((await xxh64Hex(res.body)) !== ref.dictionary)
      throw new StoreError('RO_CORRUPT', `${this.endpoint}: the dictionary of store ${store} does not match its checksum`)
    return { bytes: res.body, checksum: ref.dictionary, version: versionOf(res) }
  }

  async storeInfo(store: string): Promise<RemoteStoreInfo> {
    return this.json('GET', `/stores/${encodeURIComponent(store)}`)
  }

  /** The whole manifest of a format-2 version the node holds (its `manifest.json`, served to peers). */
  async versionManifest(store: string, version: number): Promise<unknown> {
    return this.json('GET', `/admin/stores/${encodeURIComponent(store)}/versions/${version}/files/manifest.json`, undefined, true)
  }

  async versions(store: string): Promise<{ live: number | null; versions: RemoteVersion[] }> {
    return this.json('GET', `/admin/stores/${encodeURIComponent(store)}/versions`, undefined, true)
  }

  async startFetch(store: string, body: RemoteFetchBody): Promise<RemoteJob> {
    return this.json('POST', `/admin/stores/${encodeURIComponent(store)}/fetch`, body, true)
  }

  async jobs(): Promise<RemoteJob[]> {
    return (await this.json<{ jobs: RemoteJob[] }>('GET', '/admin/jobs', undefined, true)).jobs
  }

  /**
   * A job as the node has it. `waitMs`: a long poll, answered when the job ends or after
   * that long (capped below this client's timeout); a node from before long polls answers at once.
   */
  async job(id: string, waitMs = 0): Promise<RemoteJob> {
    const wait = Math.max(0, Math.min(Math.floor(waitMs), Math.floor(this.timeoutMs / 2)))
    return this.json('GET', `/admin/jobs/${encodeURIComponent(id)}${wait > 0 ? `?waitMs=${wait}` : ''}`, undefined, true)
  }

  async cancelJob(id: string): Promise<RemoteJob> {
    return this.json('POST', `/admin/jobs/${encodeURIComponent(id)}/cancel`, {}, true)
  }

  async swap(store: string, version: number): Promise<unknown> {
    return this.json('POST', `/admin/stores/${encodeURIComponent(store)}/swap`, { version }, true)
  }

  async rollback(store: string, to?: number): Promise<{ from?: number; to?: number }> {
    return this.json('POST', `/admin/stores/${encodeURIComponent(store)}/rollback`, to === undefined ? {} : { to }, true)
  }

  async deleteVersion(store: string, version: number): Promise<void> {
    await this.json('DELETE', `/admin/stores/${encodeURIComponent(store)}/versions/${version}`, undefined, true)
  }

  async setStale(store: string, reason: string | undefined): Promise<void> {
    if (reason === undefined) await this.json('DELETE', `/admin/stores/${encodeURIComponent(store)}/stale`, undefined, true)
    else await this.json('PUT', `/admin/stores/${encodeURIComponent(store)}/stale`, { reason }, true)
  }

  /** Every store's last push record on this node (swapper/disk/push-record.ts). */
  async pushRecords(): Promise<{ node: number; stores: Record<string, { live: number | null; record: RemotePushRecord | null }> }> {
    return this.json('GET', '/admin/push-records', undefined, true)
  }

  /** Keep `record` as the store's last push record when it is newer than the node's. */
  async putPushRecord(store: string, record: RemotePushRecord): Promise<{ applied: boolean; behind: number | null }> {
    return this.json('PUT', `/admin/stores/${encodeURIComponent(store)}/push-record`, record, true)
  }

  /** Hands the node other nodes' addresses; it keeps those it did not know and lists all it knows. */
  async learnNodes(nodes: readonly NodeAddress[]): Promise<{ added: number[]; nodes: NodeAddress[] }> {
    return this.json('POST', '/admin/cluster/nodes', { nodes }, true)
  }

  async lock(store: string, owner: string, ttlMs: number): Promise<void> {
    await this.json('POST', `/admin/stores/${encodeURIComponent(store)}/lock`, { owner, ttlMs }, true)
  }

  async unlock(store: string, owner: string): Promise<void> {
    await this.json('DELETE', `/admin/stores/${encodeURIComponent(store)}/lock`, { owner }, true)
  }

  /** Extends a lease `owner` still holds; RO_CONFLICT when it was lost (broken, taken, node restarted). */
  async renewLock(store: string, owner: string, ttlMs: number): Promise<void> {
    await this.json('POST', `/admin/stores/${encodeURIComponent(store)}/lock`, { owner, ttlMs, renew: true }, true)
  }

  /** The push lease on the store, if one is live. */
  async lockInfo(store: string): Promise<RemoteLease | undefined> {
    const r = await this.json<{ locked: boolean } & Partial<RemoteLease>>(
      'GET',
      `/admin/stores/${encodeURIComponent(store)}/lock`,
      undefined,
      true,
    )
    return r.locked && r.owner !== undefined && r.expiresAt !== undefined
      ? { owner: r.owner, expiresAt: r.expiresAt, expiresInMs: r.expiresInMs ?? 0 }
      : undefined
  }

  /** Drops the push lease whoever holds it (an operator's break); the owner it had, if live. */
  async breakLock(store: string): Promise<string | null> {
    const r = await this.json<{ broken: string | null }>('DELETE', `/admin/stores/${encodeURIComponent(store)}/lock`, { break: true }, true)
    return r.broken
  }

  /** Tells the node it holds the push's version, verified, and waits for the decision. */
  async prepare(store: string, p: RemotePrepared): Promise<void> {
    await this.json('POST', `/admin/stores/${encodeURIComponent(store)}/prepare`, p, true)
  }

  /** Writes the node's vote if it has none (and the outcome, when known); answers what the node holds. */
  async vote(store: string, pushId: string, body: { vote: Outcome; version: number; outcome?: Outcome }): Promise<RemoteVote> {
    return this.json('POST', `/admin/stores/${encodeURIComponent(store)}/decisions/${encodeURIComponent(pushId)}`, body, true)
  }

  /** The prepared push of the store, whether its pusher is gone, and the last decisions. */
  async decisions(store: string): Promise<RemoteDecisions> {
    return this.json('GET', `/admin/stores/${encodeURIComponent(store)}/decision`, undefined, true)
  }

  close(): void {
    this.agent.destroy()
  }

  private readHeaders(): Record<string, string> {
    return this.opts.readToken === undefined ? {} : { Authorization: `Bearer ${this.opts.readToken}` }
  }

  private async json<T>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown, admin = false): Promise<T> {
    const headers: Record<string, string> = admin ? {} : this.readHeaders()
    if (admin) {
      if (!this.opts.adminToken)
        throw new StoreError('RO_UNAUTHORIZED', `${this.endpoint}: no admin token (give --admin-token or set ROSTORE_ADMIN_TOKEN)`)
      headers['Authorization'] = `Bearer ${this.opts.adminToken}`
    }
    if (body !== undefined) headers['Content-Type'] = 'application/json'
    const res = await this.call(method, path, body === undefined ? undefined : JSON.stringify(body), headers)
    if (res.status < 200 || res.status >= 300) throw errorFromResponse(this.endpoint, res)
    try {
      return JSON.parse(res.body.toString('utf8')) as T
    } catch (err) {
      throw new StoreError('RO_BAD_REQUEST', `${this.endpoint}: answered ${res.status} with a body that is not JSON`, { cause: err })
    }
  }

  /** GET, PUT and DELETE are idempotent (HTTP semantics, and so are this API's); POSTs only when said. */
  private call(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    body?: Buffer | string,
    headers: Record<string, string> = {},
    idempotent = method !== 'POST',
  ): Promise<HttpResponse> {
    return httpRequest({
      idempotent,
      host: this.node.host,
      port: this.node.port,
      method,
      path,
      body,
      headers,
      timeoutMs: this.timeoutMs,
      agent: this.agent,
      ...(this.node.tls === undefined ? {} : { tls: this.node.tls }),
      maxResponseBytes: this.opts.maxResponseBytes,
    })
  }
}

/** Every read response names the version that served it (lower-cased by node:http). */
const VERSION_HEADER = 'x-rostore-version'

function versionOf(res: HttpResponse): number {
  const v = Number(res.headers[VERSION_HEADER])
  return Number.isSafeInteger(v) ? v : 0
}

/** Percent-encodes every byte outside the unreserved set, so binary keys travel intact. */
export function percentEncode(key: Uint8Array | string): string {
  const b = typeof key === 'string' ? Buffer.from(key, 'utf8') : key
  let out = ''
  for (const byte of b) {
    const unreserved =
      (byte >= 0x30 && byte <= 0x39) ||
      (byte >= 0x41 && byte <= 0x5a) ||
      (byte >= 0x61 && byte <= 0x7a) ||
      byte === 0x2d ||
      byte === 0x2e ||
      byte === 0x5f ||
      byte === 0x7e
    out += unreserved ? String.fromCharCode(byte) : `%${byte < 16 ? '0' : ''}${byte.toString(16).toUpperCase()}`
  }
  return out
}
