import { isUtf8 } from 'node:buffer'
import { closeSync, openSync, fstatSync } from 'node:fs'
import { join } from 'node:path'
import { codecByName, type ValueCodec } from '../chunk/codec'
import { HEADER_SIZE } from '../chunk/header'
import type { StoreMetadata } from '../layout/metadata'
import { slotFileNames } from '../layout/partition-files'
import { slotCount } from '../layout/slots'
import { walkRecords } from './record-walk'

export interface DumpedRecord {
  /** The chunk slot (partition-files.ts): the chunk in format 1. */
  readonly chunk: number
  readonly key: string
  readonly value: string
  /** 'utf8' when key and value are valid UTF-8 text, otherwise both are base64. */
  readonly encoding: 'utf8' | 'base64'
}

/** Every record of a node directory (either format), chunk slot by chunk slot, in index order. */
export function* dumpRecords(
  dir: string,
  meta: StoreMetadata,
  limit = Infinity,
  codec: ValueCodec = codecByName(meta.compression),
): Generator<DumpedRecord> {
  let n = 0
  for (let c = 0; c < slotCount(meta) && n < limit; c++) {
    const file = join(dir, slotFileNames(meta, c).data)
    const fd = openSync(file, 'r')
    try {
      for (const r of walkRecords(fd, HEADER_SIZE, fstatSync(fd).size, file)) {
        if (n++ >= limit) return
        const value = codec.decode(r.value)
        yield isUtf8(r.key) && isUtf8(value)
          ? { chunk: c, key: r.key.toString('utf8'), value: value.toString('utf8'), encoding: 'utf8' }
          : { chunk: c, key: r.key.toString('base64'), value: value.toString('base64'), encoding: 'base64' }
      }
    } finally {
      closeSync(fd)
    }
  }
}
