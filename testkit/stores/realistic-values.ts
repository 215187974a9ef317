import { randomBytes } from 'node:crypto'
import { mulberry32 } from '../../common/prng'

/**
 * Values shaped like a recommendation store's, for tests and the bench: JSON records
 * with the same field names in every value, ids drawn from a skewed (Zipf-like)
 * distribution, 100 B to 2 KiB each. The same seed gives the same values, in order.
 */
export interface RealisticValues {
  /** The i-th value of the sequence (call in order: each call draws from the generator). */
  next(): Buffer
}

const MODELS = ['als-v7', 'two-tower-v3', 'popularity', 'session-gru-v2'] as const
const SEGMENTS = ['new', 'casual', 'regular', 'power', 'churn-risk'] as const

export function realisticValues(seed: number): RealisticValues {
  const rand = mulberry32(seed)
  const unit = (): number => rand() / 0x100000000
  // Skewed ids: a few items are recommended to everyone, most rarely.
  const itemId = (): number => Math.floor(Math.pow(unit(), 3) * 2_000_000)
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(unit() * xs.length)] as T
  let n = 0
  return {
    next: () => {
      n++
      if (unit() < 0.5) {
        const count = 2 + Math.floor(unit() * 38)
        const items = Array.from({ length: count }, () => ({ id: itemId(), score: Math.round(unit() * 10000) / 10000 }))
        return Buffer.from(JSON.stringify({ type: 'recommendations', model: pick(MODELS), generatedAt: 1764900000 + n, items }))
      }
      const dims = 4 + Math.floor(unit() * 44)
      return Buffer.from(
        JSON.stringify({
          type: 'features',
          userId: Math.floor(unit() * 50_000_000),
          segment: pick(SEGMENTS),
          country: pick(['US', 'DE', 'FR', 'BR', 'IN', 'JP'] as const),
          lastSeen: 1764900000 - Math.floor(unit() * 86400 * 30),
          embedding: Array.from({ length: dims }, () => Math.round((unit() * 2 - 1) * 1000) / 1000),
          recentItems: Array.from({ length: Math.floor(unit() * 8) }, itemId),
        }),
      )
    },
  }
}

/** `count` records keyed `${prefix}${i}` with the values of realisticValues(seed), as text. */
export function realisticRecords(seed: number, count: number, prefix: string): [string, string][] {
  const gen = realisticValues(seed)
  return Array.from({ length: count }, (_, i) => [`${prefix}${i}`, gen.next().toString()])
}

/**
 * The value shapes every codec must carry, keyed by their names: empty, one byte,
 * incompressible (3,000 random bytes as base64), 64 KiB of one pattern, ~4 MiB incompressible.
 */
export function valueShapes(): [string, string][] {
  return [
    ['empty', ''],
    ['one', 'x'],
    ['random', randomBytes(3000).toString('base64')],
    ['k64', 'ab'.repeat(32 << 9)],
    ['m4', randomBytes(3 << 20).toString('base64')],
  ]
}
