import { argBytes, argText, quoteArg, type CommandSpec, type Handler } from '../command-table'
import { clientInfoLine } from './info'

export const BAD_NAME = 'ERR Client names cannot contain spaces, newlines or special characters.'

/** Client names and library names: printable ASCII without spaces, as Redis requires. */
export function validName(b: Buffer): boolean {
  for (const x of b) if (x < 0x21 || x > 0x7e) return false
  return true
}

const conn = { group: 'connection', complexity: 'O(1)', firstKey: 0, lastKey: 0, step: 0 } as const

const CLIENT_HELP = [
  'CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
  'GETNAME',
  '    Return the name of the current connection.',
  'ID',
  '    Return the ID of the current connection.',
  'INFO',
  '    Return information about the current client connection.',
  'SETINFO <option> <value>',
  '    Set client meta attr. Options are:',
  '    * LIB-NAME: the client lib name.',
  '    * LIB-VER: the client lib version.',
  'SETNAME <name>',
  '    Assign the name <name> to the current connection.',
  'HELP',
  '    Print this help.',
]

const client: Handler = (_s, c) => {
  const argc = c.parser.argc
  const sub = argText(c, 1).toLowerCase()
  const arity = (n: number): boolean => {
    if (argc === n) return true
    c.out().error(`ERR wrong number of arguments for 'client|${sub}' command`)
    return false
  }
  switch (sub) {
    case 'setname': {
      if (!arity(3)) return
      const b = argBytes(c, 2)
      if (!validName(b)) {
        c.out().error(BAD_NAME)
        return
      }
      c.name = b.toString('latin1')
      c.out().simple('OK')
      return
    }
    case 'getname':
      if (!arity(2)) return
      if (c.name === '') c.out().nil(c.proto)
      else c.out().bulkText(c.name)
      return
    case 'id':
      if (arity(2)) c.out().integer(c.id)
      return
    case 'info':
      if (arity(2)) c.out().verbatim(`${clientInfoLine(c)}\n`, c.proto)
      return
    case 'setinfo': {
      if (!arity(4)) return
      const opt = argText(c, 2).toLowerCase()
      const b = argBytes(c, 3)
      if (opt !== 'lib-name' && opt !== 'lib-ver') {
        c.out().error(`ERR Unrecognized option '${quoteArg(argBytes(c, 2))}'`)
        return
      }
      if (!validName(b)) {
        c.out().error(`ERR ${opt} cannot contain spaces, newlines or special characters.`)
        return
      }
      if (opt === 'lib-name') c.libName = b.toString('latin1')
      else c.libVer = b.toString('latin1')
      c.out().simple('OK')
      return
    }
    case 'help':
      c.out().array(CLIENT_HELP.length)
      for (const line of CLIENT_HELP) c.out().simple(line)
      return
    default:
      c.out().error(`ERR unknown subcommand '${quoteArg(argBytes(c, 1))}'. Try CLIENT HELP.`)
  }
}

const sub = (name: string, arity: number, summary: string): Omit<CommandSpec, 'run' | 'subcommands'> => ({
  ...conn,
  name: `client|${name}`,
  arity,
  flags: ['noscript', 'loading', 'stale'],
  categories: ['@slow', '@connection'],
  summary,
  since: '2.6.9',
  args: [],
})

/** CLIENT SETNAME/GETNAME/ID/INFO/SETINFO/HELP: the connection's own state only (no CLIENT LIST or KILL). */
export const CLIENT_COMMAND: CommandSpec = {
  ...conn,
  name: 'client',
  arity: -2,
  flags: [],
  categories: ['@slow'],
  summary: 'A container for client connection commands.',
  since: '2.4.0',
  args: [],
  subcommands: [
    sub('setname', 3, 'Sets the connection name.'),
    sub('getname', 2, 'Returns the name of the connection.'),
    sub('id', 2, 'Returns the unique client ID of the connection.'),
    sub('info', 2, 'Returns information about the connection.'),
    sub('setinfo', 4, 'Sets information specific to the client or connection.'),
    sub('help', 2, 'Returns helpful text about the different subcommands.'),
  ],
  run: client,
}
