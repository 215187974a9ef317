import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { isStoreError } from '../../../common/errors'
import { MAX_DECISIONS, parsePrepared, readDecisionState, writeDecisionState, type PreparedPush } from '../../../swapper/disk/push-decision'
import { makeTmp } from '../../../testkit/stores/tmp'

const tmp = makeTmp('rostore-push-decision-unit-')
afterAll(() => tmp.cleanup())

const good = {
  pushId: 'push-1',
  kind: 'push',
  version: 7,
  participants: [2, 0, 1, 0],
  missed: [3],
  source: 'http://u:p@h/b',
  seq: 5,
  fetched: true,
}

function code(fn: () => unknown): string | undefined {
  try {
    fn()
    return undefined
  } catch (err) {
    return isStoreError(err) ? err.code : 'other'
  }
}

test('a prepare is validated field by field; ids sorted and unique; credentials never kept', () => {
  const p = parsePrepared(good)
  expect(p).toMatchObject({ pushId: 'push-1', participants: [0, 1, 2], missed: [3], fetched: true })
  expect(p.source).not.toContain('u:p')
  for (const bad of [
    { ...good, pushId: '' },
    { ...good, pushId: 'a/b' },
    { ...good, kind: 'swap' },
    { ...good, version: 1.5 },
    { ...good, participants: [] },
    { ...good, participants: [-1] },
    { ...good, seq: 0 },
    { ...good, fetched: 'yes' },
    { ...good, source: '' },
    { ...good, other: 1 },
    [good],
    null,
  ]) {
    expect({ bad, code: code(() => parsePrepared(bad)) }).toEqual({ bad, code: 'RO_BAD_REQUEST' })
  }
})

test('the state survives a reopen; only the newest decisions are kept; a damaged file is refused', async () => {
  const dir = tmp.fresh()
  expect(await readDecisionState(dir)).toEqual({ decisions: [] })
  const prepared: PreparedPush = parsePrepared(good)
  const decisions = Array.from({ length: MAX_DECISIONS + 5 }, (_, i) => ({
    pushId: `p${i}`,
    version: i + 1,
    vote: 'commit' as const,
    at: 't',
  }))
  await writeDecisionState(dir, { prepared, decisions })
  const back = await readDecisionState(dir)
  expect(back.prepared).toEqual(prepared)
  expect(back.decisions.map((d) => d.pushId)).toEqual(decisions.slice(-MAX_DECISIONS).map((d) => d.pushId))
  writeFileSync(join(dir, 'DECISION'), '{"prepared":null,"decisions":[{"pushId":"x","version":1,"vote":"maybe"}]}')
  await expect(readDecisionState(dir)).rejects.toMatchObject({ code: 'RO_CORRUPT' })
})
