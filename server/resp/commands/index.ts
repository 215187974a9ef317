import type { CommandSpec } from '../command-table'
import { CONNECTION_COMMANDS } from './connection'
import { INFO_COMMAND } from './info'
import { INTROSPECTION_COMMANDS } from './introspection'
import { READ_COMMANDS } from './reads'

/** Every command the RESP port answers (COMMAND lists exactly these). */
export const COMMANDS: readonly CommandSpec[] = [...READ_COMMANDS, ...CONNECTION_COMMANDS, INFO_COMMAND, ...INTROSPECTION_COMMANDS]

/**
 * Redis commands that change data: they get Redis's own read-only answer,
 * `-READONLY You can't write against a read only store.`, so clients report it as the
 * write refusal it is. Any other unknown name gets `-ERR unknown command`.
 */
export const WRITE_COMMANDS: ReadonlySet<string> = new Set(
  (
    'set setnx setex psetex append del unlink incr decr incrby decrby incrbyfloat mset msetnx getset getdel getex ' +
    'setrange setbit bitop bitfield expire pexpire expireat pexpireat persist rename renamenx move copy restore migrate ' +
    'lpush rpush lpushx rpushx lpop rpop lset linsert lrem ltrim rpoplpush lmove blpop brpop brpoplpush blmove lmpop blmpop ' +
    'sadd srem spop smove sinterstore sunionstore sdiffstore ' +
    'zadd zincrby zrem zpopmin zpopmax bzpopmin bzpopmax zmpop bzmpop zremrangebyscore zremrangebyrank zremrangebylex ' +
    'zunionstore zinterstore zdiffstore zrangestore ' +
    'hset hsetnx hmset hdel hincrby hincrbyfloat ' +
    'pfadd pfmerge geoadd georadius georadiusbymember geosearchstore xadd xdel xtrim xgroup xack xclaim xautoclaim xsetid ' +
    'flushdb flushall swapdb sort'
  ).split(' '),
)
