/**
 * Peer: tinycdb's `cdb -c` (Debian package `tinycdb`), a single-threaded C builder of
 * constant databases — the closest thing to rostore's build among classic tools.
 *
 * Input: the same records in the same order, written once (untimed) in cdb's native
 * input format `+klen,dlen:key->value\n`, ending with an empty line — cdb's own text
 * format, as the TSV is rostore's. Timed: `cdb -c out.cdb in` plus one fsync of the
 * result (`sync FILE`): tinycdb renames its temp file into place without fsyncing it, while
 * rostore's build fsyncs its output. A cdb file cannot exceed 4 GiB, so larger data sets
 * are skipped with that reason.
 */
import { join } from 'node:path'
import { datasetId, ensureDir, KEY_DIGITS, workRoot, writeDerived, type Dataset } from '../kit/data'
import { ensureDebian, runTimed, which, type TimedResult } from '../kit/system'

export const CDB_LIMIT_BYTES = 2 ** 32 - 1

/** undefined when `cdb` is (now) installed, else why not. */
export function ensureCdb(): Promise<string | undefined> {
  return ensureDebian(['cdb'], ['tinycdb'])
}

/** Why this data set cannot go into a cdb, if it cannot. */
export function cdbTooLarge(ds: Dataset): string | undefined {
  // 24 bytes of hash table and record header per record besides key and value, plus 2 KiB.
  const estimate = ds.payloadBytes + ds.shape.records * 24 + 2048
  return estimate > CDB_LIMIT_BYTES
    ? `a cdb file is limited to 4 GiB; this data set needs about ${(estimate / 2 ** 30).toFixed(1)} GiB`
    : undefined
}

/** The cdb-format input of a data set, written once under work/data. */
export function ensureCdbInput(ds: Dataset): string {
  const path = join(ensureDir(join(workRoot(), 'data')), `${datasetId(ds.shape, ds.seed)}.cdbin`)
  const v = ds.shape.valueBytes
  const prefix = Buffer.from(`+${KEY_DIGITS},${v}:`, 'latin1')
  const recBytes = prefix.length + KEY_DIGITS + 2 + v + 1
  writeDerived(
    path,
    { kind: 'cdbin', records: ds.shape.records, valueBytes: v, seed: ds.seed, v: 1 },
    ds.shape,
    ds.seed,
    (rec, out, at) => {
      let p = at + prefix.copy(out, at)
      p += rec.copy(out, p, 0, KEY_DIGITS)
      out[p++] = 0x2d // -
      out[p++] = 0x3e // >
      p += rec.copy(out, p, KEY_DIGITS)
      out[p++] = 0x0a
      return p - at
    },
    recBytes,
    Buffer.from('\n'),
  )
  return path
}

/** Timed `cdb -c` into `outDir/db.cdb`, fsync included. */
export async function buildCdb(input: string, outDir: string): Promise<{ timed: TimedResult; file: string }> {
  const cdb = which('cdb')
  if (!cdb) throw new Error('cdb not installed')
  const file = join(outDir, 'db.cdb')
  const timed = await runTimed('sh', ['-c', 'cdb -c "$1" "$2" && sync "$1"', 'cdb-build', file, input], { timeoutMs: 3_600_000 })
  return { timed, file }
}
