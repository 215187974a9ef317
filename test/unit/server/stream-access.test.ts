import type { IncomingMessage } from 'node:http'
import { AdminAuth, AdminDisabledError, checkAdminOrRead, ReadAuth } from '../../../server/auth'

const ADMIN = 'admin-token-0123456789'
const READ = 'read-token-0123456789'

function req(token?: string): IncomingMessage {
  return { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } } as IncomingMessage
}

function outcome(admin: AdminAuth, read: ReadAuth, token?: string): string {
  try {
    checkAdminOrRead(req(token), admin, read)
    return 'ok'
  } catch (err) {
    // AdminDisabledError: the node answers 403 RO_FORBIDDEN.
    return err instanceof AdminDisabledError ? 'disabled' : ((err as { code?: string }).code ?? 'thrown')
  }
}

test('the dump streams open with the admin token, or the read token where reads are protected', () => {
  const admin = new AdminAuth(ADMIN)
  const protectedReads = new ReadAuth(READ, admin)
  expect(outcome(admin, protectedReads, ADMIN)).toBe('ok')
  expect(outcome(admin, protectedReads, READ)).toBe('ok')
  expect(outcome(admin, protectedReads, 'nope')).toBe('RO_UNAUTHORIZED')
  expect(outcome(admin, protectedReads)).toBe('RO_UNAUTHORIZED')
  // Public reads do not make bulk extraction public: only the admin token opens it.
  const publicReads = new ReadAuth(undefined, admin)
  expect(outcome(admin, publicReads, ADMIN)).toBe('ok')
  expect(outcome(admin, publicReads, READ)).toBe('RO_UNAUTHORIZED')
  expect(outcome(admin, publicReads)).toBe('RO_UNAUTHORIZED')
  // A node without an admin token: the read token still opens them; nothing else does.
  const noAdmin = new AdminAuth(undefined)
  expect(outcome(noAdmin, new ReadAuth(READ, noAdmin), READ)).toBe('ok')
  expect(outcome(noAdmin, new ReadAuth(READ, noAdmin), 'nope')).toBe('disabled')
})
