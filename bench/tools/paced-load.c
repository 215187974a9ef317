/*
 * Open-loop, evenly paced GET load in C, for "latency at a given rate":
 *   paced-load <port> <http|resp> <store> <records> <seed> <rate> <connections> <seconds> [zipf-s]
 *
 * Request j is due at start + j / rate whatever happened to earlier ones; it goes out on
 * a free keep-alive connection as soon as it is due (or waits for one), and its latency
 * is counted from its due time, so a server that stalls is charged for every request
 * queued behind the stall (no coordinated omission, as wrk2). One request per connection
 * at a time. Keys are record ids drawn uniformly from [0, records) by a seeded generator,
 * written as bench/data.ts's keyOf (12 digits, zero-padded). With [zipf-s] > 0, ids are
 * ZIPF_DRAWS Zipf(s) ranks drawn at start and cycled through, as the Node client cycles its
 * draws (a hot set of fixed size: rank r is record id r - 1; records lie in hash order on
 * disk, so the hot ones are scattered over the files as the Node client's permuted are).
 *
 * Why C: the same loop in Node (paced-client.ts) costs ~40 us of its own core per request
 * and pauses for its collections; at 25k requests/s its own stalls were the p99 it
 * reported, for Redis as much as for rostore. This one costs a few microseconds per
 * request and allocates nothing after start-up. Bounded by <seconds> plus a drain of at
 * most 10 s; connects to 127.0.0.1 only. Prints one line of JSON (bench/load-client.ts's
 * LoadResult). With PACED_LOG_SLOW_MS=<ms> in the environment it also writes, on stderr,
 * "<due time since start, ms> <latency, ms>" for every answer slower than that: how the
 * slow answers cluster in time (bench/analysis.ts, resp-p99).
 *
 * The JSON also carries "hist": [[bucket, count], ...] over the answered requests, bucket
 * b holding latencies in [HIST_BASE^b, HIST_BASE^(b+1)) microseconds (b = 0 also below
 * 1 us), so that runs over consecutive seconds pool into one percentile
 * (bench/load/latency-histogram.ts) within 2% of the exact one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF_BYTES (1 << 20)
#define HIST_BASE 1.02
#define MAX_CONNECTIONS 1024

typedef struct {
  int fd;
  int busy;
  int dead; /* closed by the server or failed: never used again */
  double due;
  size_t used;
  char *buf;
} conn;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The stretch before a request is due that is spun rather than slept: a wakeup's lateness
 * on this kind of VM with a 1 us timer slack. */
#define SPIN_MS 0.02

/* epoll_wait for up to `ms` (0 or less: a poll), with a microsecond timeout where the
 * kernel has epoll_pwait2 (5.11), else rounded down to whole milliseconds. */
static int wait_events(int ep, struct epoll_event *events, int max, double ms) {
  static int have_pwait2 = 1;
  if (ms <= 0) return epoll_wait(ep, events, max, 0);
  if (have_pwait2) {
    struct timespec t = {.tv_sec = (time_t)(ms / 1000.0), .tv_nsec = (long)(fmod(ms, 1000.0) * 1e6)};
    int n = epoll_pwait2(ep, events, max, &t, NULL);
    if (n >= 0 || errno != ENOSYS) return n;
    have_pwait2 = 0;
  }
  return epoll_wait(ep, events, max, (int)ms);
}

static uint64_t rng_state;
static uint64_t next_random(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

#define ZIPF_DRAWS 200000
/* The Zipf draws, cycled; NULL for uniform ids. */
static uint64_t *zipf_ids;
static size_t zipf_at;

static int zipf_init(uint64_t n, double s) {
  double *cdf = malloc(n * sizeof *cdf);
  zipf_ids = malloc(ZIPF_DRAWS * sizeof *zipf_ids);
  if (cdf == NULL || zipf_ids == NULL) return -1;
  double sum = 0;
  for (uint64_t r = 1; r <= n; r++) cdf[r - 1] = (sum += pow((double)r, -s));
  for (size_t d = 0; d < ZIPF_DRAWS; d++) {
    double u = (double)(next_random() >> 11) * 0x1.0p-53 * sum;
    uint64_t lo = 0, hi = n - 1;
    while (lo < hi) {
      uint64_t mid = lo + (hi - lo) / 2;
      if (cdf[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    zipf_ids[d] = lo;
  }
  free(cdf);
  return 0;
}

static uint64_t next_id(uint64_t records) {
  if (zipf_ids == NULL) return next_random() % records;
  uint64_t id = zipf_ids[zipf_at];
  zipf_at = (zipf_at + 1) % ZIPF_DRAWS;
  return id;
}

static int protocol_resp;
static const char *store;

/* The request for record `id` into out; its length. */
static int format_request(char *out, size_t cap, uint64_t id) {
  char key[32];
  snprintf(key, sizeof key, "%012llu", (unsigned long long)id);
  if (protocol_resp) return snprintf(out, cap, "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n", strlen(key), key);
  return snprintf(out, cap, "GET /stores/%s/keys/%s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", store, key);
}

/* Bytes of the first complete response in buf (0: incomplete, -1: unparseable); *status
 * is 200 (value), 404 (absent) or 500 (an error reply or another status). */
static long parse_response(const char *buf, size_t len, int *status) {
  if (protocol_resp) {
    const char *nl = memmem(buf, len, "\r\n", 2);
    if (nl == NULL) return 0;
    size_t head = (size_t)(nl - buf) + 2;
    if (buf[0] == '-') {
      *status = 500;
      return (long)head;
    }
    if (buf[0] != '$') return -1;
    long n = strtol(buf + 1, NULL, 10);
    if (n < 0) {
      *status = 404;
      return (long)head;
    }
    *status = 200;
    return len >= head + (size_t)n + 2 ? (long)(head + (size_t)n + 2) : 0;
  }
  const char *end = memmem(buf, len, "\r\n\r\n", 4);
  if (end == NULL) return 0;
  size_t head = (size_t)(end - buf) + 4;
  if (len < 12 || memcmp(buf, "HTTP/1.1 ", 9) != 0) return -1;
  int code = atoi(buf + 9);
  *status = code == 200 || code == 404 ? code : 500;
  const char *cl = NULL;
  for (const char *p = buf; p + 16 < end; p++) {
    if ((p[0] == '\n') && strncasecmp(p + 1, "content-length:", 15) == 0) {
      cl = p + 16;
      break;
    }
  }
  if (cl == NULL) return -1;
  size_t body = (size_t)strtoul(cl, NULL, 10);
  return len >= head + body ? (long)(head + body) : 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int hist_bucket(double ms) {
  double us = ms * 1000.0;
  return us < 1.0 ? 0 : (int)floor(log(us) / log(HIST_BASE));
}

/* The sorted latencies as ,"hist":[[b,n],...] (runs of one bucket are consecutive). */
static void print_hist(const double *sorted, size_t n) {
  printf(",\"hist\":[");
  size_t i = 0;
  while (i < n) {
    int b = hist_bucket(sorted[i]);
    size_t j = i;
    while (j < n && hist_bucket(sorted[j]) == b) j++;
    printf("%s[%d,%zu]", i == 0 ? "" : ",", b, j - i);
    i = j;
  }
  printf("]");
}

static double percentile(const double *sorted, size_t n, double p) {
  if (n == 0) return 0.0 / 0.0;
  size_t i = (size_t)((p / 100.0) * (double)n);
  if (i >= n) i = n - 1;
  return sorted[i];
}

int main(int argc, char **argv) {
  if (argc != 9 && argc != 10) {
    fprintf(stderr, "usage: paced-load <port> <http|resp> <store> <records> <seed> <rate> <connections> <seconds> [zipf-s]\n");
    return 2;
  }
  int port = atoi(argv[1]);
  protocol_resp = strcmp(argv[2], "resp") == 0;
  store = argv[3];
  uint64_t records = strtoull(argv[4], NULL, 10);
  rng_state = strtoull(argv[5], NULL, 10) + 17;
  double rate = atof(argv[6]);
  int nconn = atoi(argv[7]);
  double seconds = atof(argv[8]);
  double zipf_s = argc == 10 ? atof(argv[9]) : 0.0;
  const char *log_slow = getenv("PACED_LOG_SLOW_MS");
  double log_slow_ms = log_slow != NULL ? atof(log_slow) : 0.0;
  if (port <= 0 || records == 0 || rate <= 0 || nconn <= 0 || nconn > MAX_CONNECTIONS || seconds <= 0) {
    fprintf(stderr, "paced-load: bad arguments\n");
    return 2;
  }
  if (zipf_s > 0 && zipf_init(records, zipf_s) != 0) return 1;
  /* Timers with 1 us of slack (the default 50 us would make every sleep as late). */
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  size_t total = (size_t)(rate * seconds + 0.5);
  if (total == 0) total = 1;
  double interval = 1000.0 / rate;
  double *latencies = malloc(total * sizeof *latencies);
  conn *conns = calloc((size_t)nconn, sizeof *conns);
  int *free_list = malloc((size_t)nconn * sizeof *free_list);
  int nfree = 0;
  int ep = epoll_create1(0);
  if (latencies == NULL || conns == NULL || free_list == NULL || ep < 0) return 1;
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < nconn; i++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
      perror("paced-load: connect");
      return 1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    conns[i].fd = fd;
    conns[i].buf = malloc(BUF_BYTES);
    if (conns[i].buf == NULL) return 1;
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    free_list[nfree++] = i;
  }

  /* lost: requests on a connection that died before answering; they count as errors. */
  size_t sent = 0, done = 0, lost = 0, s200 = 0, s404 = 0, other = 0, errors = 0;
  int alive = nconn;
  char request[256];
  double start = now_ms();
  double deadline = start + (seconds + 10.0) * 1000.0;
  struct epoll_event events[64];
  while (done + lost < total && alive > 0) {
    double now = now_ms();
    if (now > deadline) break;
    while (sent < total && nfree > 0) {
      double due = start + (double)sent * interval;
      if (due > now) break;
      conn *c = &conns[free_list[--nfree]];
      int n = format_request(request, sizeof request, next_id(records));
      if (send(c->fd, request, (size_t)n, MSG_NOSIGNAL) != n) {
        /* Out of the free list for good; the request goes out on the next free connection. */
        fprintf(stderr, "paced-load: a write failed on connection %d\n", (int)(c - conns));
        errors++;
        c->dead = 1;
        alive--;
        epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
        continue;
      }
      c->busy = 1;
      c->due = due;
      sent++;
    }
    /* Sleep until the next request is due (or an answer comes), to the microsecond, and
     * spin only the last SPIN_MS: at 4-8k requests/s a millisecond timeout is always 0 and
     * the generator spun, taking most of a core from the servers it measures. */
    double wait = 10.0;
    if (sent < total && nfree > 0) wait = start + (double)sent * interval - now_ms() - SPIN_MS;
    int n = wait_events(ep, events, 64, wait);
    for (int e = 0; e < n; e++) {
      int i = (int)events[e].data.u32;
      conn *c = &conns[i];
      ssize_t r = read(c->fd, c->buf + c->used, BUF_BYTES - c->used);
      if (r <= 0) {
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        fprintf(stderr, "paced-load: connection %d closed by the server\n", i);
        errors++;
        epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
        c->dead = 1;
        alive--;
        if (c->busy) {
          lost++; /* its request will never be answered */
        } else {
          for (int k = 0; k < nfree; k++) /* a free connection must not be handed out again */
            if (free_list[k] == i) free_list[k--] = free_list[--nfree];
        }
        continue;
      }
      c->used += (size_t)r;
      for (;;) {
        int status = 0;
        long used = parse_response(c->buf, c->used, &status);
        if (used == 0) break;
        if (used < 0) {
          fprintf(stderr, "paced-load: unparseable response on connection %d\n", i);
          return 1;
        }
        memmove(c->buf, c->buf + used, c->used - (size_t)used);
        c->used -= (size_t)used;
        if (done < total) {
          latencies[done] = now_ms() - c->due;
          if (log_slow_ms > 0 && latencies[done] > log_slow_ms) fprintf(stderr, "%.3f %.3f\n", c->due - start, latencies[done]);
        }
        done++;
        if (status == 200) s200++;
        else if (status == 404) s404++;
        else other++;
        c->busy = 0;
        free_list[nfree++] = i;
      }
      if (c->used == BUF_BYTES) {
        fprintf(stderr, "paced-load: a response larger than %d bytes\n", BUF_BYTES);
        return 1;
      }
    }
  }
  double secs = (now_ms() - start) / 1000.0;
  qsort(latencies, done < total ? done : total, sizeof *latencies, cmp_double);
  size_t m = done < total ? done : total;
  printf("{\"requests\":%zu,\"secs\":%.6f,\"rps\":%.3f,\"keysPerSec\":%.3f,\"status200\":%zu,\"status404\":%zu,"
         "\"otherStatus\":%zu,\"errors\":%zu,\"timeouts\":0,\"p50Ms\":%.6f,\"p90Ms\":%.6f,\"p99Ms\":%.6f,\"maxMs\":%.6f",
         s200 + s404, secs, (double)(s200 + s404) / secs, (double)(s200 + s404) / secs, s200, s404, other, errors + (total - done - lost),
         percentile(latencies, m, 50), percentile(latencies, m, 90), percentile(latencies, m, 99), m ? latencies[m - 1] : 0.0 / 0.0);
  print_hist(latencies, m);
  printf("}\n");
  return 0;
}
