/**
 * The INI dialect of the shared AWS files (~/.aws/config, ~/.aws/credentials): `[section]`
 * headers, `key = value` lines, `#` and `;` comments. Indented lines belong to a nested
 * block (`s3 =` followed by indented settings) and are skipped: rostore reads only the
 * top-level keys.
 */
export function parseIni(text: string): Map<string, Record<string, string>> {
  const sections = new Map<string, Record<string, string>>()
  let current: Record<string, string> | undefined
  for (const raw of text.split(/\r?\n/)) {
    if (/^\s/.test(raw)) continue
    const line = raw.trim()
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue
    const header = /^\[\s*([^\]]+?)\s*\]$/.exec(line)
    if (header !== null) {
      const name = header[1]!.replace(/\s+/g, ' ')
      current = sections.get(name) ?? Object.create(null)
      sections.set(name, current!)
      continue
    }
    const eq = line.indexOf('=')
    if (eq <= 0 || current === undefined) continue
    current[line.slice(0, eq).trim().toLowerCase()] = line.slice(eq + 1).trim()
  }
  return sections
}
