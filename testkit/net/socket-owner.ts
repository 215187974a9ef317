import { readdir, readFile, readlink } from 'node:fs/promises'

/**
 * Which process opened a loopback TCP connection, from Linux's /proc: the client socket's
 * inode (its line in /proc/net/tcp, by local and remote port), then which of the given
 * processes holds that inode among its file descriptors. Lets a test proxy treat one
 * process's links apart from others' (the pusher's from the nodes') on one host.
 */
export async function ownerOf(clientPort: number, serverPort: number, pids: readonly number[]): Promise<number | undefined> {
  const inode = await socketInode(clientPort, serverPort)
  if (inode === undefined) return undefined
  for (const pid of pids) {
    const fds = await readdir(`/proc/${pid}/fd`).catch(() => [] as string[])
    for (const fd of fds) {
      if ((await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '')) === `socket:[${inode}]`) return pid
    }
  }
  return undefined
}

async function socketInode(localPort: number, remotePort: number): Promise<string | undefined> {
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = await readFile(table, 'utf8').catch(() => '')
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/)
      const local = cols[1]?.split(':').pop()
      const remote = cols[2]?.split(':').pop()
      if (local === undefined || remote === undefined || cols[9] === undefined) continue
      if (parseInt(local, 16) === localPort && parseInt(remote, 16) === remotePort && cols[9] !== '0') return cols[9]
    }
  }
  return undefined
}
