import type { IncomingMessage, ServerResponse } from 'node:http'
import { StoreError } from '../../common/errors'
import { checkStoreName, parseVersionText } from '../../swapper/disk/version-names'
import type { AppContext, ReadContext } from '../context'
import { badRequest, decodeNameSegment } from '../http/http-util'
import { isJobId } from '../jobs/jobs'
import { isPushId } from '../../swapper/disk/push-decision'
import { DICTIONARY_FILE } from '../../formats/store/chunk/dictionary-file'
import { MANIFEST_FILE, parsePartitionFileName } from '../../formats/store/layout/partition-files'

/**
 * One row of the node's route table: its path pattern, methods, who may call it, the
 * operation label its requests are counted under, where it runs, and the handler.
 * Patterns are literal segments, `:name` for one decoded and validated segment, and a
 * final `*key` for the rest of the path, raw (keys are percent-decoded to bytes by their
 * handler). Read routes run in every serving loop; control routes where the node's
 * versions live (docs/SERVING.md).
 */
export type Route = ReadRoute | ControlRoute

interface RouteBase {
  readonly path: string
  readonly methods: readonly string[]
  /**
   * public: anyone; read: the read token when one is configured; admin: the admin token;
   * metrics: the metrics token when one is configured (control routes only).
   */
  readonly access: 'public' | 'read' | 'admin' | 'metrics'
  /** The `op` label of the request metrics. */
  readonly op: string
}

export interface ReadRoute extends RouteBase {
  readonly scope: 'read'
  readonly handle: (ctx: ReadContext, req: IncomingMessage, res: ServerResponse, params: RouteParams) => Promise<void> | void
}

export interface ControlRoute extends RouteBase {
  readonly scope: 'control'
  readonly handle: (ctx: AppContext, req: IncomingMessage, res: ServerResponse, params: RouteParams) => Promise<void> | void
}

/** Every parameter a pattern may name, already validated. */
interface ParamTypes {
  /** A store name (checkStoreName). */
  readonly store: string
  /** A job id (isJobId). */
  readonly job: string
  /** A positive version number. */
  readonly version: number
  /** A push id (isPushId). */
  readonly push: string
  /** A file of a version a peer may ask for: `manifest.json` or `p<P>-c<C>.index|data` (isPeerFileName). */
  readonly file: string
  /** The rest of the path, raw: `*key`. */
  readonly key: string
}
export type RouteParams = Partial<ParamTypes>

type ParamNames<P extends string> = P extends `${infer Head}/${infer Rest}`
  ? ParamNames<Head> | ParamNames<Rest>
  : P extends `:${infer Name}`
    ? Name
    : P extends `*${infer Name}`
      ? Name
      : never

type Handler<C, P extends string> = (
  ctx: C,
  req: IncomingMessage,
  res: ServerResponse,
  params: Pick<ParamTypes, Extract<ParamNames<P>, keyof ParamTypes>>,
) => Promise<void> | void

interface RouteSpec<C, P extends string> {
  readonly path: P
  readonly methods: readonly string[]
  readonly access: Route['access']
  readonly op: string
  readonly handle: Handler<C, P>
}

/** A route served by every serving loop; its handler sees exactly the parameters its pattern names. */
export function readRoute<P extends string>(spec: RouteSpec<ReadContext, P>): Route {
  return { ...spec, scope: 'read' } as ReadRoute
}

/** A route served where the node's versions live (the supervisor of a multi-process node). */
export function controlRoute<P extends string>(spec: RouteSpec<AppContext, P>): Route {
  return { ...spec, scope: 'control' } as ControlRoute
}

/** The names the peer file route serves: never a path, only the manifest, the zstd dictionary and partition files. */
export function isPeerFileName(name: string): boolean {
  return name === MANIFEST_FILE || name === DICTIONARY_FILE || parsePartitionFileName(name) !== undefined
}

/** Parses one `:name` segment; throws RO_BAD_REQUEST when it is not a valid value. */
function parseParam(name: string, segment: string): string | number {
  switch (name) {
    case 'store':
      return checkStoreName(decodeNameSegment(segment))
    case 'job': {
      const id = decodeNameSegment(segment)
      if (!isJobId(id)) throw badRequest('invalid job id')
      return id
    }
    case 'push': {
      const id = decodeNameSegment(segment)
      if (!isPushId(id)) throw badRequest('invalid push id: 1-128 characters of [A-Za-z0-9._:-]')
      return id
    }
    case 'file': {
      const name = decodeNameSegment(segment)
      if (!isPeerFileName(name)) throw badRequest('invalid file name: manifest.json, zstd.dict or p<partition>-c<chunk>.index|data')
      return name
    }
    case 'version': {
      const v = parseVersionText(decodeNameSegment(segment))
      if (v === undefined) throw badRequest('invalid version: a positive integer')
      return v
    }
    default:
      throw new RangeError(`route parameter :${name} has no parser`)
  }
}

/**
 * Matches `segments` (the path split at '/', without the leading one) against a pattern;
 * undefined when the shape differs. Parameters are validated as they are met, so a
 * malformed store name is a 400 even on a path that would be a 404 further on.
 */
export function matchRoute(pattern: string, segments: readonly string[]): RouteParams | undefined {
  const parts = pattern.slice(1).split('/')
  const params: Record<string, string | number> = {}
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as string
    if (part.startsWith('*')) {
      if (segments.length <= i) return undefined
      params[part.slice(1)] = segments.slice(i).join('/')
      return params as RouteParams
    }
    const seg = segments[i]
    if (seg === undefined) return undefined
    if (part.startsWith(':')) params[part.slice(1)] = parseParam(part.slice(1), seg)
    else if (part !== seg) return undefined
  }
  return segments.length === parts.length ? (params as RouteParams) : undefined
}

/** The routes whose pattern matches a path, and the parameters of each. */
export function findRoutes(table: readonly Route[], segments: readonly string[]): { route: Route; params: RouteParams }[] {
  const out: { route: Route; params: RouteParams }[] = []
  for (const r of table) {
    const params = matchRoute(r.path, segments)
    if (params) out.push({ route: r, params })
  }
  return out
}

export function noRoute(method: string, path: string): StoreError {
  return new StoreError('RO_NOT_FOUND', `no route ${method} ${path.slice(0, 200)}`)
}
