/*
 * Random 1 KiB buffered reads of a file whose pages were evicted, a fixed number in flight:
 * threads doing pread, against one io_uring without SQPOLL (batched submission, one
 * io_uring_enter per round that submits and reaps). Prints reads/s and CPU seconds per read
 * (getrusage of the whole process, so kernel time spent on its behalf counts).
 *
 *   cc -O2 -pthread -o uring-vs-pread uring-vs-pread.c
 *   ./uring-vs-pread FILE pread|populate|uring|uring-touch INFLIGHT READS
 *
 * Raw system calls: liburing is not installed here, nor on every CI machine.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define READ_SIZE 1024

static int fd;
static uint64_t blocks; /* READ_SIZE blocks in the file */
static uint64_t total;
static uint64_t next_read; /* atomically claimed */

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void *pread_thread(void *arg) {
  uint64_t seed = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
  char buf[READ_SIZE];
  while (__atomic_fetch_add(&next_read, 1, __ATOMIC_RELAXED) < total) {
    off_t off = (off_t)(rnd(&seed) % blocks) * READ_SIZE;
    if (pread(fd, buf, READ_SIZE, off) != READ_SIZE) {
      perror("pread");
      exit(1);
    }
  }
  return NULL;
}

/* Today's warm-up of a node: MADV_POPULATE_READ of the record's page of a MADV_RANDOM mapping. */
static uint8_t *map;
static volatile uint8_t sink;
static void *populate_thread(void *arg) {
  uint64_t seed = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
  while (__atomic_fetch_add(&next_read, 1, __ATOMIC_RELAXED) < total) {
    uint64_t off = (rnd(&seed) % blocks) * READ_SIZE;
    if (madvise(map + (off & ~4095ull), 4096, MADV_POPULATE_READ) != 0) {
      perror("madvise");
      exit(1);
    }
  }
  return NULL;
}

static void run_pread(int threads, void *(*fn)(void *)) {
  pthread_t t[256];
  for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, fn, (void *)(uintptr_t)(i + 1));
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
}

static void run_uring(unsigned inflight) {
  struct io_uring_params p;
  memset(&p, 0, sizeof p);
  int ring = (int)syscall(__NR_io_uring_setup, inflight, &p);
  if (ring < 0) {
    perror("io_uring_setup");
    exit(1);
  }
  size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(uint32_t);
  size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
  if (p.features & IORING_FEAT_SINGLE_MMAP) sq_len = cq_len = sq_len > cq_len ? sq_len : cq_len;
  uint8_t *sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
  uint8_t *cq = (p.features & IORING_FEAT_SINGLE_MMAP) ? sq : mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
  struct io_uring_sqe *sqes = mmap(NULL, p.sq_entries * sizeof *sqes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
  if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) {
    perror("mmap ring");
    exit(1);
  }
  uint32_t *sq_tail = (uint32_t *)(sq + p.sq_off.tail), sq_mask = *(uint32_t *)(sq + p.sq_off.ring_mask);
  uint32_t *sq_array = (uint32_t *)(sq + p.sq_off.array);
  uint32_t *cq_head = (uint32_t *)(cq + p.cq_off.head), *cq_tail = (uint32_t *)(cq + p.cq_off.tail);
  uint32_t cq_mask = *(uint32_t *)(cq + p.cq_off.ring_mask);
  struct io_uring_cqe *cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
  char *bufs = malloc((size_t)inflight * READ_SIZE);
  uint64_t seed = 88172645463325252ull, issued = 0, done = 0;
  unsigned free_slots[1024], nfree = inflight;
  uint64_t offsets[1024];
  for (unsigned i = 0; i < inflight; i++) free_slots[i] = i;
  while (done < total) {
    uint32_t tail = *sq_tail, to_submit = 0;
    while (nfree > 0 && issued < total) {
      unsigned slot = free_slots[--nfree];
      struct io_uring_sqe *e = &sqes[tail & sq_mask];
      memset(e, 0, sizeof *e);
      e->opcode = IORING_OP_READ;
      e->fd = fd;
      e->off = (rnd(&seed) % blocks) * READ_SIZE;
      offsets[slot] = e->off;
      e->addr = (uintptr_t)(bufs + (size_t)slot * READ_SIZE);
      e->len = READ_SIZE;
      e->user_data = slot;
      sq_array[tail & sq_mask] = tail & sq_mask;
      tail++;
      to_submit++;
      issued++;
    }
    __atomic_store_n(sq_tail, tail, __ATOMIC_RELEASE);
    if (syscall(__NR_io_uring_enter, ring, to_submit, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0 && errno != EINTR) {
      perror("io_uring_enter");
      exit(1);
    }
    uint32_t head = *cq_head;
    while (head != __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE)) {
      struct io_uring_cqe *c = &cqes[head & cq_mask];
      if (c->res != READ_SIZE) {
        fprintf(stderr, "read: %d\n", c->res);
        exit(1);
      }
      free_slots[nfree++] = (unsigned)c->user_data;
      /* uring-touch: the lookup after a warm-up reads the record through the mapping (a minor fault). */
      if (map != NULL) sink += map[offsets[c->user_data]];
      done++;
      head++;
    }
    __atomic_store_n(cq_head, head, __ATOMIC_RELEASE);
  }
  close(ring);
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s FILE pread|populate|uring|uring-touch INFLIGHT READS\n", argv[0]);
    return 2;
  }
  fd = open(argv[1], O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    perror(argv[1]);
    return 1;
  }
  blocks = (uint64_t)st.st_size / READ_SIZE;
  int inflight = atoi(argv[3]);
  total = strtoull(argv[4], NULL, 10);
  if (inflight < 1 || inflight > 256) return 2;
  posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  if (strcmp(argv[2], "populate") == 0 || strcmp(argv[2], "uring-touch") == 0) {
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED || madvise(map, (size_t)st.st_size, MADV_RANDOM) != 0) return 1;
  }
  struct rusage r0, r1;
  getrusage(RUSAGE_SELF, &r0);
  double t0 = now();
  if (strcmp(argv[2], "pread") == 0) run_pread(inflight, pread_thread);
  else if (strcmp(argv[2], "populate") == 0) run_pread(inflight, populate_thread);
  else run_uring((unsigned)inflight);
  double t = now() - t0;
  getrusage(RUSAGE_SELF, &r1);
  double user = (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) + (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e6;
  double sys = (r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) + (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
  printf("%s inflight=%d reads=%llu %.0f reads/s cpu/read %.1f us (user %.1f sys %.1f) majflt %ld\n", argv[2], inflight, (unsigned long long)total, total / t,
         (user + sys) / total * 1e6, user / total * 1e6, sys / total * 1e6, r1.ru_majflt - r0.ru_majflt);
  return 0;
}
