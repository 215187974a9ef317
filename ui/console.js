// The rostore console: polls its own node's GET /ui/cluster.json and draws it. Plain DOM,
// no framework, no build step. Every value from the server goes in through textContent
// (never innerHTML), and every request goes to the node the page came from.
'use strict'
;(() => {
  const POLL_MS = 1500
  const HIDDEN_POLL_MS = 15000
  const MAX_EVENTS = 25
  const TOKEN_KEY = 'rostore-read-token'
  const $ = (id) => document.getElementById(id)
  let timer
  let polling = false

  /** An element with a class, data attributes and children (strings become text nodes). */
  function el(tag, opts, ...children) {
    const e = document.createElement(tag)
    if (opts && opts.cls) e.className = opts.cls
    if (opts && opts.data) for (const [k, v] of Object.entries(opts.data)) e.dataset[k] = String(v)
    if (opts && opts.title) e.title = opts.title
    for (const c of children) if (c !== null && c !== undefined && c !== false) e.append(c instanceof Node ? c : String(c))
    return e
  }

  function bytes(n) {
    if (typeof n !== 'number' || !isFinite(n)) return '–'
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB']
    let i = 0
    while (Math.abs(n) >= 1024 && i < units.length - 1) {
      n /= 1024
      i++
    }
    return `${n >= 100 || i === 0 ? Math.round(n) : n.toFixed(1)} ${units[i]}`
  }

  function seconds(s) {
    if (typeof s !== 'number' || !isFinite(s)) return '–'
    if (s < 90) return `${Math.round(s)} s`
    if (s < 5400) return `${Math.round(s / 60)} min`
    if (s < 172800) return `${Math.round(s / 3600)} h`
    return `${Math.round(s / 86400)} d`
  }

  function rate(n) {
    return typeof n === 'number' && isFinite(n) ? `${n >= 100 ? Math.round(n) : n.toFixed(1)}/s` : '–'
  }

  function clock(iso) {
    const d = new Date(iso)
    return isNaN(d.getTime()) ? '?' : d.toLocaleTimeString([], { hour12: false })
  }

  function versions(list) {
    return Array.isArray(list) && list.length > 0 ? list.map((v) => `v${v}`).join(' ') : '–'
  }

  /** Partition numbers, shortened to ranges: 0-3 7 9-10. */
  function ranges(list) {
    if (!Array.isArray(list) || list.length === 0) return '–'
    const out = []
    let start = list[0]
    let prev = list[0]
    for (const p of list.slice(1).concat([NaN])) {
      if (p === prev + 1) {
        prev = p
        continue
      }
      out.push(start === prev ? `${start}` : `${start}-${prev}`)
      start = prev = p
    }
    return out.join(' ')
  }

  function setStatus(state, text) {
    document.body.dataset.status = state
    $('status').textContent = text
    $('status').className = `status ${state}`
  }

  // ---- nodes ----
  function nodeCard(n) {
    const v = n.view
    // Up without a view: the node answered but showed nothing (refused our token, an older rostore).
    const state = n.up ? (v ? 'up' : 'no-view') : 'down'
    const card = el(
      'article',
      { cls: `card ${state}`, data: { nodeId: n.id, state } },
      el('h3', null, `node ${n.id}`, el('span', { cls: `badge ${n.up ? 'ok' : 'bad'}` }, n.up ? 'up' : 'down')),
      el('p', { cls: 'addr' }, `${n.host}:${n.port}`),
    )
    if (!v) {
      card.append(el('p', { cls: n.up ? 'warn' : 'error' }, n.error || 'no answer'))
      return card
    }
    const modes = [...new Set(v.stores.map((s) => s.accessMode).filter(Boolean))]
    const disk = v.disk ? `${bytes(v.disk.freeBytes)} free of ${bytes(v.disk.totalBytes)}` : '–'
    const low = v.disk && v.disk.totalBytes > 0 && v.disk.freeBytes / v.disk.totalBytes < 0.1
    const dl = el('dl')
    const row = (k, val, cls) => dl.append(el('dt', null, k), el('dd', cls ? { cls } : null, val))
    row('workers', `${v.workers.serving}/${v.workers.configured}${v.workers.restarts ? ` · ${v.workers.restarts} restarts` : ''}`)
    row('access', modes.length ? modes.join(', ') : '–')
    row('disk', disk, low ? 'warn' : null)
    row('memory', `${bytes(v.rssBytes)} RSS`)
    row('reads', rate(v.readsPerSec))
    row('up for', seconds(v.uptimeSeconds))
    if (v.shuttingDown) row('state', 'shutting down', 'warn')
    card.append(dl)
    return card
  }

  // ---- operations ----
  function jobRows(nodes) {
    const rows = []
    for (const n of nodes) {
      if (!n.view) continue
      for (const j of n.view.jobs) rows.push({ node: n.id, job: j })
    }
    rows.sort(
      (a, b) => (a.job.state === 'running' ? 0 : 1) - (b.job.state === 'running' ? 0 : 1) || b.job.createdAt.localeCompare(a.job.createdAt),
    )
    // Every running job; of the finished ones, the newest of each node, kind and store.
    const seen = new Set()
    const shown = rows.filter(({ node, job }) => {
      if (job.state === 'running') return true
      const key = `${node}/${job.kind}/${job.store}`
      if (seen.has(key)) return false
      seen.add(key)
      return true
    })
    if (shown.length === 0) return [el('p', { cls: 'muted' }, 'no push, rollback or repair in the last minutes')]
    return shown.slice(0, 24).map(({ node, job }) => {
      const p = job.progress
      const pct =
        p && p.bytesTotal > 0 ? Math.min(100, Math.floor((100 * p.bytesDone) / p.bytesTotal)) : job.state === 'succeeded' ? 100 : 0
      const bar = el('progress', null)
      bar.max = 100
      bar.value = pct
      const detail = p
        ? `${bytes(p.bytesDone)} of ${bytes(p.bytesTotal)} · ${p.rateBytesPerSec ? `${bytes(p.rateBytesPerSec)}/s` : '–'}${
            job.state === 'running' ? ` · ETA ${seconds(p.etaSeconds)}` : ''
          }`
        : ''
      return el(
        'div',
        { cls: `job ${job.state}`, data: { node, kind: job.kind, store: job.store, state: job.state, percent: pct } },
        el(
          'span',
          { cls: 'job-title' },
          `node ${node} · ${job.kind} ${job.store}${typeof job.version === 'number' ? ` → v${job.version}` : ''}`,
        ),
        bar,
        el('span', { cls: 'job-pct' }, `${pct}%`),
        el('span', { cls: 'job-detail' }, `${job.state}${job.errorCode ? ` (${job.errorCode})` : ''} ${detail}`),
      )
    })
  }

  // ---- stores ----
  function storeBlocks(nodes) {
    const names = new Set()
    for (const n of nodes) if (n.view) for (const s of n.view.stores) names.add(s.store)
    if (names.size === 0) return [el('p', { cls: 'muted' }, 'no stores yet')]
    return [...names].sort().map((name) => storeBlock(name, nodes))
  }

  function storeBlock(name, nodes) {
    const per = nodes.map((n) => ({ n, s: n.view ? n.view.stores.find((x) => x.store === name) : undefined }))
    const layout = (per.find((p) => p.s && p.s.layout) || {}).s
    const lay = layout ? layout.layout : null
    const inLayout = (id) => !lay || lay.nodes.some((x) => x.id === id)
    const counts = new Map()
    for (const p of per) if (p.s && p.s.live !== null && inLayout(p.n.id)) counts.set(p.s.live, (counts.get(p.s.live) || 0) + 1)
    const lives = new Set(counts.keys())
    const mixed = lives.size > 1
    // The version most nodes serve (the newer one on a tie): the others are the odd ones out.
    const newest = [...counts].sort((a, b) => b[1] - a[1] || b[0] - a[0]).map(([v]) => v)[0] || 0
    const head = el(
      'h3',
      null,
      name,
      mixed
        ? el(
            'span',
            { cls: 'badge bad', data: { mixed: 'true' } },
            `mixed versions: ${[...lives]
              .sort((a, b) => a - b)
              .map((v) => `v${v}`)
              .join(', ')}`,
          )
        : el('span', { cls: 'badge ok' }, lives.size ? `v${newest} on every node up` : 'no live version'),
    )
    const table = el('table')
    table.append(
      el(
        'thead',
        null,
        el(
          'tr',
          null,
          ...['node', 'live', 'state', 'backups', 'newer', 'records', 'size', 'reads', 'partitions held'].map((h) => el('th', null, h)),
        ),
      ),
    )
    const body = el('tbody')
    for (const { n, s } of per) {
      const held = lay ? lay.nodes.find((x) => x.id === n.id) : undefined
      if (!s && !held) continue
      const problems = []
      if (!n.view) problems.push(n.up ? `no view: ${n.error || '?'}` : 'down')
      else if (!s) problems.push('missing')
      else {
        if (s.stale) problems.push('stale')
        if (s.behind !== null) problems.push(`behind: should serve v${s.behind}`)
        if (mixed && s.live !== newest) problems.push(`v${s.live}, most nodes serve v${newest}`)
        if (s.corruptReads > 0) problems.push(`${s.corruptReads} corrupt reads`)
      }
      const tr = el('tr', {
        cls: problems.length ? 'problem' : '',
        data: { node: n.id, store: name, live: s && s.live !== null ? s.live : '' },
      })
      const cells = [
        `node ${n.id}`,
        s && s.live !== null ? `v${s.live}` : '–',
        problems.length ? problems.join(', ') : 'ok',
        s ? versions(s.backups) : '–',
        s ? versions(s.newer) : '–',
        s && s.records !== null ? s.records.toLocaleString() : '–',
        s ? bytes(s.sizeBytes) : '–',
        s ? rate(s.readsPerSec) : '–',
        held ? `${ranges(held.holds)}${held.masters.length ? ` (master ${ranges(held.masters)})` : ''}` : '–',
      ]
      cells.forEach((c, i) => tr.append(el('td', { cls: i === 2 && problems.length ? 'warn' : null }, c)))
      body.append(tr)
    }
    table.append(body)
    const note = lay
      ? el('p', { cls: 'muted' }, `${lay.partitions} partitions, each on ${lay.replication} node${lay.replication === 1 ? '' : 's'}`)
      : null
    return el('div', { cls: `store${mixed ? ' mixed' : ''}`, data: { store: name } }, head, note, el('div', { cls: 'scroll' }, table))
  }

  // ---- events ----
  function eventItems(nodes) {
    const all = []
    for (const n of nodes) if (n.view) for (const e of n.view.events) all.push({ node: n.id, e })
    all.sort((a, b) => b.e.at.localeCompare(a.e.at) || b.e.seq - a.e.seq)
    if (all.length === 0) return [el('li', { cls: 'muted' }, 'nothing yet')]
    return all
      .slice(0, MAX_EVENTS)
      .map(({ node, e }) =>
        el(
          'li',
          { cls: e.level, data: { kind: e.kind, node } },
          el('time', { title: e.at }, clock(e.at)),
          el('span', { cls: 'ev-node' }, `node ${node}`),
          e.store ? el('span', { cls: 'ev-store' }, e.store) : null,
          el('span', { cls: 'ev-text' }, e.text),
          e.count > 1 ? el('span', { cls: 'ev-count' }, `×${e.count}`) : null,
        ),
      )
  }

  function render(view) {
    const up = view.nodes.filter((n) => n.up).length
    const more = view.notShown > 0 ? ` (${view.notShown} more not shown)` : ''
    $('summary').textContent =
      `cluster ${view.cluster} · ${up} of ${view.nodes.length} nodes up${more} · as seen by node ${view.self} at ${clock(view.at)}`
    $('nodes').replaceChildren(...view.nodes.map(nodeCard))
    $('jobs').replaceChildren(...jobRows(view.nodes))
    $('stores').replaceChildren(...storeBlocks(view.nodes))
    $('events').replaceChildren(...eventItems(view.nodes))
    $('main').hidden = false
  }

  function askToken(refused) {
    $('token-form').hidden = false
    $('token-error').hidden = !refused
    $('main').hidden = true
    setStatus(refused ? 'refused' : 'token', refused ? 'refused' : 'read token needed')
    $('summary').textContent = 'this node wants its read token'
    $('token').focus()
  }

  async function poll() {
    if (polling) return
    polling = true
    const token = sessionStorage.getItem(TOKEN_KEY)
    try {
      const res = await fetch('/ui/cluster.json', {
        headers: token ? { Authorization: `Bearer ${token}` } : {},
        cache: 'no-store',
        credentials: 'omit',
        redirect: 'error',
      })
      if (res.status === 401 || res.status === 403) {
        sessionStorage.removeItem(TOKEN_KEY)
        askToken(token !== null)
        return
      }
      if (!res.ok) throw new Error(`the node answered ${res.status}`)
      render(await res.json())
      $('token-form').hidden = true
      setStatus('ok', 'live')
    } catch (err) {
      setStatus('error', `no answer from this node (${err && err.message ? err.message : 'error'}); retrying`)
    } finally {
      polling = false
      schedule()
    }
  }

  function schedule() {
    clearTimeout(timer)
    // A page waiting for its token does not poll.
    if (!$('token-form').hidden) return
    // A tab in the background asks rarely: an open console left behind costs the cluster little.
    timer = setTimeout(poll, document.hidden ? HIDDEN_POLL_MS : POLL_MS)
  }

  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && $('token-form').hidden) void poll()
  })

  $('token-form').addEventListener('submit', (ev) => {
    ev.preventDefault()
    const value = $('token').value.trim()
    if (!value) return
    // A token the node could never accept (checkToken's rule) is refused here: it cannot even travel in a header.
    if (!/^[\x21-\x7e]{1,4096}$/.test(value)) {
      $('token').value = ''
      askToken(true)
      return
    }
    sessionStorage.setItem(TOKEN_KEY, value)
    $('token').value = ''
    $('token-form').hidden = true
    void poll()
  })

  void poll()
})()
