import type { RespConnection } from '../connection'
import {
  argBytes,
  argInt,
  argText,
  NOT_INTEGER,
  quoteArg,
  wrongArity,
  type CommandSpec,
  type Handler,
  type RespService,
} from '../command-table'
import { BAD_NAME, CLIENT_COMMAND, validName } from './client-command'
import { REDIS_COMPAT_VERSION } from './info'

const WRONGPASS = 'WRONGPASS invalid username-password pair or user is disabled.'
const NO_PASSWORD =
  'ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?'
const HELLO_NOAUTH =
  'NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time'

/**
 * Checks a password (and user name: only "default" exists) against the read token.
 * Without a read token configured, AUTH default <anything> succeeds as on a Redis whose
 * default user has no password.
 */
function authenticate(s: RespService, c: RespConnection, userArg: number | undefined, passArg: number): boolean {
  if (userArg !== undefined && argText(c, userArg) !== 'default') {
    s.stats.authFailures++
    return false
  }
  if (!s.ctx.readAuth.enabled) return true
  if (s.ctx.readAuth.matches(argBytes(c, passArg))) return true
  s.stats.authFailures++
  return false
}

const auth: Handler = (s, c) => {
  if (c.parser.argc > 3) {
    c.out().error('ERR syntax error')
    return
  }
  if (c.parser.argc === 2 && !s.ctx.readAuth.enabled) {
    c.out().error(NO_PASSWORD)
    return
  }
  if (authenticate(s, c, c.parser.argc === 3 ? 1 : undefined, c.parser.argc - 1)) {
    c.authed = true
    c.out().simple('OK')
  } else {
    c.out().error(WRONGPASS)
  }
}

const hello: Handler = (s, c) => {
  const argc = c.parser.argc
  let proto = c.proto
  if (argc >= 2) {
    const v = argInt(c, 1)
    if (v === undefined) {
      c.out().error('ERR Protocol version is not an integer or out of range')
      return
    }
    if (v !== 2 && v !== 3) {
      c.out().error('NOPROTO unsupported protocol version')
      return
    }
    proto = v
  }
  let name: string | undefined
  let authed = c.authed
  for (let i = 2; i < argc; i++) {
    const opt = argText(c, i).toLowerCase()
    if (opt === 'auth' && i + 2 < argc) {
      if (!authenticate(s, c, i + 1, i + 2)) {
        c.out().error(WRONGPASS)
        return
      }
      authed = true
      i += 2
    } else if (opt === 'setname' && i + 1 < argc) {
      const b = argBytes(c, i + 1)
      if (!validName(b)) {
        c.out().error(BAD_NAME)
        return
      }
      name = b.toString('latin1')
      i += 1
    } else {
      c.out().error(`ERR Syntax error in HELLO option '${quoteArg(argBytes(c, i))}'`)
      return
    }
  }
  if (!authed) {
    c.out().error(HELLO_NOAUTH)
    return
  }
  c.authed = true
  c.proto = proto
  if (name !== undefined) c.name = name
  const out = c.out()
  out.map(7, proto)
  out.bulkText('server')
  out.bulkText('rostore')
  out.bulkText('version')
  out.bulkText(REDIS_COMPAT_VERSION)
  out.bulkText('proto')
  out.integer(proto)
  out.bulkText('id')
  out.integer(c.id)
  out.bulkText('mode')
  out.bulkText('standalone')
  out.bulkText('role')
  out.bulkText('master')
  out.bulkText('modules')
  out.array(0)
}

const ping: Handler = (_s, c) => {
  if (c.parser.argc > 2) c.out().error(wrongArity('ping'))
  else if (c.parser.argc === 2) c.out().bulk(argBytes(c, 1))
  else c.out().simple('PONG')
}

const select: Handler = (_s, c) => {
  const db = argInt(c, 1)
  if (db === undefined) c.out().error(NOT_INTEGER)
  else if (db !== 0) c.out().error('ERR DB index is out of range')
  else c.out().simple('OK')
}

const reset: Handler = (s, c) => {
  c.proto = 2
  c.name = ''
  c.authed = !s.ctx.readAuth.enabled
  c.out().simple('RESET')
}

const conn = { group: 'connection', complexity: 'O(1)', firstKey: 0, lastKey: 0, step: 0 } as const
const fastConn = ['noscript', 'loading', 'stale', 'fast', 'no_auth', 'allow_busy']

export const CONNECTION_COMMANDS: readonly CommandSpec[] = [
  {
    ...conn,
    name: 'ping',
    arity: -1,
    flags: ['fast'],
    categories: ['@fast', '@connection'],
    summary: "Returns the server's liveliness response.",
    since: '1.0.0',
    args: [{ name: 'message', type: 'string', optional: true }],
    run: ping,
  },
  {
    ...conn,
    name: 'echo',
    arity: 2,
    flags: ['fast'],
    categories: ['@fast', '@connection'],
    summary: 'Returns the given string.',
    since: '1.0.0',
    args: [{ name: 'message', type: 'string' }],
    run: (_s, c) => c.out().bulk(argBytes(c, 1)),
  },
  {
    ...conn,
    name: 'hello',
    arity: -1,
    flags: fastConn,
    categories: ['@fast', '@connection'],
    summary: 'Handshakes with the server: protocol version (2 or 3), AUTH, SETNAME.',
    since: '6.0.0',
    args: [
      { name: 'protover', type: 'integer', optional: true },
      { name: 'username-password', type: 'string', token: 'AUTH', optional: true },
      { name: 'clientname', type: 'string', token: 'SETNAME', optional: true },
    ],
    noAuth: true,
    run: hello,
  },
  {
    ...conn,
    name: 'auth',
    arity: -2,
    flags: fastConn,
    categories: ['@fast', '@connection'],
    summary: 'Authenticates the connection with the read token (--read-token).',
    since: '1.0.0',
    args: [
      { name: 'username', type: 'string', optional: true },
      { name: 'password', type: 'string' },
    ],
    noAuth: true,
    run: auth,
  },
  CLIENT_COMMAND,
  {
    ...conn,
    name: 'select',
    arity: 2,
    flags: ['loading', 'stale', 'fast'],
    categories: ['@fast', '@connection'],
    summary: 'Selects database 0, the only one.',
    since: '1.0.0',
    args: [{ name: 'index', type: 'integer' }],
    run: select,
  },
  {
    ...conn,
    name: 'quit',
    arity: -1,
    flags: fastConn,
    categories: ['@fast', '@connection'],
    summary: 'Closes the connection once the replies before it are sent.',
    since: '1.0.0',
    args: [],
    noAuth: true,
    run: (_s, c) => {
      c.out().simple('OK')
      c.closeAfterReplies()
    },
  },
  {
    ...conn,
    name: 'reset',
    arity: 1,
    flags: fastConn,
    categories: ['@fast', '@connection'],
    summary: 'Resets the connection: protocol 2, no name, not authenticated.',
    since: '6.2.0',
    args: [],
    noAuth: true,
    run: reset,
  },
]
