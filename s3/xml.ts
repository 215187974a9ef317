/**
 * The few XML documents S3 answers with (ListObjectsV2, InitiateMultipartUpload, Error):
 * flat elements of text, read with a scan rather than a general parser. Values are
 * entity-decoded; nothing here evaluates or follows anything in the document.
 */

/** The text of every `<tag>...</tag>` in `xml`, in order (not nested ones of the same name). */
export function elements(xml: string, tag: string): string[] {
  const out: string[] = []
  const open = `<${tag}>`
  const close = `</${tag}>`
  for (let i = xml.indexOf(open); i !== -1; i = xml.indexOf(open, i)) {
    const end = xml.indexOf(close, i + open.length)
    if (end === -1) break
    out.push(xml.slice(i + open.length, end))
    i = end + close.length
  }
  return out
}

/** The decoded text of the first `<tag>`, or undefined. */
export function element(xml: string, tag: string): string | undefined {
  const [first] = elements(xml, tag)
  return first === undefined ? undefined : decodeEntities(first)
}

const NAMED: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }

export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (whole, name: string) => {
    if (name.startsWith('#x')) return safeCodePoint(parseInt(name.slice(2), 16)) ?? whole
    if (name.startsWith('#')) return safeCodePoint(parseInt(name.slice(1), 10)) ?? whole
    return NAMED[name] ?? whole
  })
}

function safeCodePoint(n: number): string | undefined {
  return Number.isInteger(n) && n >= 0 && n <= 0x10ffff ? String.fromCodePoint(n) : undefined
}

/** `text` made safe inside an XML element. */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&${{ '&': 'amp', '<': 'lt', '>': 'gt', '"': 'quot', "'": 'apos' }[c]};`)
}
