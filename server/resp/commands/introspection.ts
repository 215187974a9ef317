import type { RespProto } from '../../../formats/wire/resp'
import type { RespWriter } from '../../../formats/wire/resp-writer'
import { argBytes, argText, quoteArg, type ArgDoc, type CommandSpec, type Handler } from '../command-table'

type Info = Omit<CommandSpec, 'run' | 'subcommands'> & { readonly subcommands?: readonly Omit<CommandSpec, 'run' | 'subcommands'>[] }

/** COMMAND INFO's ten fields (Redis 7): name, arity, flags, keys, categories, tips, key specs, subcommands. */
function writeInfo(out: RespWriter, c: Info, proto: RespProto): void {
  out.array(10)
  out.bulkText(c.name)
  out.integer(c.arity)
  out.set(c.flags.length, proto)
  for (const f of c.flags) out.simple(f)
  out.integer(c.firstKey)
  out.integer(c.lastKey)
  out.integer(c.step)
  out.set(c.categories.length, proto)
  for (const cat of c.categories) out.simple(cat)
  out.set(0, proto)
  out.array(0)
  const subs = c.subcommands ?? []
  out.array(subs.length)
  for (const s of subs) writeInfo(out, s, proto)
}

function writeArg(out: RespWriter, a: ArgDoc, proto: RespProto): void {
  const flags = [...(a.optional ? ['optional'] : []), ...(a.multiple ? ['multiple'] : [])]
  const fields = 3 + (a.token ? 1 : 0) + (flags.length ? 1 : 0)
  out.map(fields, proto)
  out.bulkText('name')
  out.bulkText(a.name)
  out.bulkText('type')
  out.bulkText(a.type)
  out.bulkText('display_text')
  out.bulkText(a.name)
  if (a.token) {
    out.bulkText('token')
    out.bulkText(a.token)
  }
  if (flags.length) {
    out.bulkText('flags')
    out.set(flags.length, proto)
    for (const f of flags) out.simple(f)
  }
}

/** COMMAND DOCS of one command: summary, since, group, complexity, arguments (and subcommands). */
function writeDocs(out: RespWriter, c: Info, proto: RespProto): void {
  const subs = c.subcommands ?? []
  out.map(subs.length ? 6 : 5, proto)
  out.bulkText('summary')
  out.bulkText(c.summary)
  out.bulkText('since')
  out.bulkText(c.since)
  out.bulkText('group')
  out.bulkText(c.group)
  out.bulkText('complexity')
  out.bulkText(c.complexity)
  out.bulkText('arguments')
  out.array(c.args.length)
  for (const a of c.args) writeArg(out, a, proto)
  if (subs.length) {
    out.bulkText('subcommands')
    out.map(subs.length, proto)
    for (const s of subs) {
      out.bulkText(s.name)
      writeDocs(out, s, proto)
    }
  }
}

const COMMAND_HELP = [
  'COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
  '(no subcommand)',
  '    Return details about all commands.',
  'COUNT',
  '    Return the total number of commands.',
  'DOCS [<command-name> ...]',
  '    Return documentation details about multiple commands (all when none is named).',
  'INFO [<command-name> ...]',
  '    Return details about multiple commands (all when none is named).',
  'LIST',
  '    Return the names of all commands.',
  'HELP',
  '    Print this help.',
]

const command: Handler = (s, c) => {
  const all = s.table.list
  const out = c.out()
  const argc = c.parser.argc
  if (argc === 1) {
    out.array(all.length)
    for (const cmd of all) writeInfo(out, cmd, c.proto)
    return
  }
  const sub = argText(c, 1).toLowerCase()
  const named = (): (CommandSpec | undefined)[] => {
    if (argc === 2) return [...all]
    const list: (CommandSpec | undefined)[] = []
    for (let i = 2; i < argc; i++) list.push(s.table.byName(argText(c, i)))
    return list
  }
  switch (sub) {
    case 'count':
      out.integer(all.length)
      return
    case 'list':
      out.array(all.length)
      for (const cmd of all) out.bulkText(cmd.name)
      return
    case 'info': {
      const list = named()
      out.array(list.length)
      for (const cmd of list) {
        if (cmd) writeInfo(out, cmd, c.proto)
        else out.nil(c.proto)
      }
      return
    }
    case 'docs': {
      const list = named().filter((x): x is CommandSpec => x !== undefined)
      out.map(list.length, c.proto)
      for (const cmd of list) {
        out.bulkText(cmd.name)
        writeDocs(out, cmd, c.proto)
      }
      return
    }
    case 'help':
      out.array(COMMAND_HELP.length)
      for (const line of COMMAND_HELP) out.simple(line)
      return
    default:
      out.error(`ERR unknown subcommand '${quoteArg(argBytes(c, 1))}'. Try COMMAND HELP.`)
  }
}

/** The only settings CONFIG GET shows: true of rostore, and what redis-benchmark reads at start. */
const CONFIG_VALUES: readonly (readonly [string, string])[] = [
  ['save', ''],
  ['appendonly', 'no'],
  ['databases', '1'],
]

/**
 * CONFIG GET answers the few settings above (exact names or `*`): load generators and
 * some clients read one or two at start. Nothing can be set: the node is configured at
 * start, and the RESP port exposes no administration.
 */
const config: Handler = (_s, c) => {
  const sub = argText(c, 1).toLowerCase()
  if (sub === 'get') {
    if (c.parser.argc < 3) {
      c.out().error("ERR wrong number of arguments for 'config|get' command")
      return
    }
    const patterns = new Set<string>()
    for (let i = 2; i < c.parser.argc; i++) patterns.add(argText(c, i).toLowerCase())
    const found = CONFIG_VALUES.filter(([k]) => patterns.has(k) || patterns.has('*'))
    const out = c.out()
    out.map(found.length, c.proto)
    for (const [k, v] of found) {
      out.bulkText(k)
      out.bulkText(v)
    }
    return
  }
  c.out().error(`ERR unknown subcommand '${quoteArg(argBytes(c, 1))}': rostore is configured at start, not over RESP`)
}

const server = { firstKey: 0, lastKey: 0, step: 0, group: 'server', complexity: 'O(N) where N is the number of commands' } as const

export const INTROSPECTION_COMMANDS: readonly CommandSpec[] = [
  {
    ...server,
    name: 'command',
    arity: -1,
    flags: ['loading', 'stale'],
    categories: ['@slow', '@connection'],
    summary: 'Returns details about commands: COUNT, INFO, DOCS, LIST.',
    since: '2.8.13',
    args: [],
    subcommands: [
      {
        ...server,
        name: 'command|count',
        arity: 2,
        flags: ['loading', 'stale'],
        categories: ['@slow', '@connection'],
        summary: 'Returns a count of commands.',
        since: '2.8.13',
        complexity: 'O(1)',
        args: [],
      },
      {
        ...server,
        name: 'command|docs',
        arity: -2,
        flags: ['loading', 'stale'],
        categories: ['@slow', '@connection'],
        summary: 'Returns documentary information about commands.',
        since: '7.0.0',
        args: [],
      },
      {
        ...server,
        name: 'command|info',
        arity: -2,
        flags: ['loading', 'stale'],
        categories: ['@slow', '@connection'],
        summary: 'Returns information about commands.',
        since: '2.8.13',
        args: [],
      },
      {
        ...server,
        name: 'command|list',
        arity: -2,
        flags: ['loading', 'stale'],
        categories: ['@slow', '@connection'],
        summary: 'Returns a list of command names.',
        since: '7.0.0',
        args: [],
      },
    ],
    run: command,
  },
  {
    ...server,
    name: 'config',
    arity: -2,
    flags: [],
    categories: ['@slow'],
    summary: 'CONFIG GET answers an empty result; nothing can be set over RESP.',
    since: '2.0.0',
    complexity: 'O(1)',
    args: [],
    subcommands: [
      {
        ...server,
        name: 'config|get',
        arity: -3,
        flags: ['admin', 'noscript', 'loading', 'stale'],
        categories: ['@slow'],
        summary: 'Returns nothing: rostore is configured at start.',
        since: '2.0.0',
        complexity: 'O(1)',
        args: [],
      },
    ],
    run: config,
  },
]
