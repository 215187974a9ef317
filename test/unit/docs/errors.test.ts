import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ERROR_CODES } from '../../../common/errors'
import { packageRoot } from '../../../common/paths'
import { httpStatusFor } from '../../../server/http/http-util'

/** The error contract: docs/ERRORS.md lists exactly the codes of the code, with the status the server answers. */
const table = readFileSync(join(packageRoot(__dirname), 'docs', 'ERRORS.md'), 'utf8')
  .split('\n')
  .map((line) => /^\| `(RO_[A-Z_]+)` \| .+ \| ([0-9 /]+) \|$/.exec(line))
  .filter((m): m is RegExpExecArray => m !== null)
  .map((m) => ({ code: m[1] as string, statuses: (m[2] as string).split('/').map((s) => Number(s.trim())) }))

describe('docs/ERRORS.md and the code agree', () => {
  test('the table lists every code of ERROR_CODES once, and nothing else', () => {
    expect(table.map((r) => r.code)).toEqual([...ERROR_CODES])
  })

  test.each([...ERROR_CODES])('%s: the first HTTP status in the table is the one the server answers', (code) => {
    const row = table.find((r) => r.code === code)
    expect(row?.statuses[0]).toBe(httpStatusFor(code))
  })
})
