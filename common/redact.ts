/**
 * Credentials that ride in source URLs: a user name and password (`https://user:pw@host/`)
 * and the query of a presigned or token URL (`...?X-Amz-Signature=...`, an Azure SAS).
 * rostore never stores, logs or returns them: every place that shows or keeps a source
 * (push records, node logs, job and fetch errors, /status, the CLI's messages) passes it,
 * or the message that holds it, through `redactCredentials`.
 */

/** What stands in for a removed user name, password or query. */
export const REDACTED = '[redacted]'

/** A URL with a scheme inside free text, up to whitespace, a quote or an angle bracket. */
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]*/gi

/**
 * `text` with the user info and query of every URL in it replaced by `[redacted]` and
 * fragments dropped; everything else is kept as written. Works on a bare source URL (what
 * a push record keeps) and on a message or log line that quotes one. Idempotent.
 */
export function redactCredentials(text: string): string {
  if (!text.includes('://')) return text
  return text.replace(URL_IN_TEXT, redactOne)
}

/** Whether `source` carries a user info or query that `redactCredentials` would hide. */
export function hasCredentials(source: string): boolean {
  return redactCredentials(source) !== source
}

/** Whether a source was redacted (a push record's copy): it cannot be fetched as it is. */
export function isRedacted(source: string): boolean {
  return source.includes(REDACTED)
}

function redactOne(url: string): string {
  const scheme = url.indexOf('://') + 3
  // Query and fragment: everything from the first '?' or '#' after the scheme.
  const q = url.indexOf('?', scheme)
  const h = url.indexOf('#', scheme)
  const cut = q === -1 ? h : h === -1 ? q : Math.min(q, h)
  let head = cut === -1 ? url : url.slice(0, cut)
  const query = q !== -1 && (h === -1 || q < h) && q + 1 < (h === -1 ? url.length : h) ? `?${REDACTED}` : ''
  // User info: as the URL parser sees it when it parses (what a client would send), else
  // conservatively everything before the last '@' of the authority-and-path.
  const at = userInfoEnd(head, scheme)
  if (at !== -1) head = `${head.slice(0, scheme)}${REDACTED}${head.slice(at)}`
  return head + query
}

/** Index of the '@' that ends the URL's user info, or -1 when it has none. */
function userInfoEnd(head: string, start: number): number {
  if (!head.includes('@', start)) return -1
  try {
    const u = new URL(head)
    if (u.username === '' && u.password === '') {
      // The parser saw no user info: an '@' in the path stays.
      return -1
    }
    // The user info ends at the last '@' before the host the parser found.
    const hostAt = head.toLowerCase().indexOf(`@${u.host}`, start)
    if (hostAt !== -1) return hostAt
  } catch {
    // Not a URL a client could use; hide conservatively below.
  }
  return head.lastIndexOf('@')
}
