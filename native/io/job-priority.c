/*
 * The priority of a process that runs jobs (fetch, verify, install) beside serving workers.
 *
 * A supervisor serves no reads: its workers do. What it does during a push (copying,
 * checksumming, writing gigabytes) competes with them for the cores and the disk, and on
 * a node with few cores that shows in the reads' tail latency. Linux keeps the nice value
 * and the I/O priority per thread; a thread, and a process forked from it, inherits them
 * from the thread that creates it, and an unprivileged process cannot raise them again.
 * So the main thread, which forks the serving workers, keeps its priority; the libuv
 * pool's threads (the jobs' file I/O; they exist from the node's first file operation on)
 * and the job worker threads (each lowers itself) are lowered.
 *
 * lowerThreadPriorities(nice, ioClass, ioLevel, self) -> number
 *   setpriority(PRIO_PROCESS, tid, nice) and ioprio_set(IOPRIO_WHO_PROCESS, tid, class/level)
 *   for the calling thread (`self` true) or for every thread in /proc/self/task but the
 *   main one: the number of threads changed, or -errno of the first failure (the threads
 *   before it are changed). ioClass 3 (idle) needs no privilege; the block layer's
 *   scheduler honours it (mq-deadline, bfq; 'none' ignores it).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "napi-util.h"

#define IOPRIO_WHO_PROCESS 1
#define IOPRIO_CLASS_SHIFT 13

static int lower_thread(pid_t tid, int nice, int io_class, int io_level) {
  if (setpriority(PRIO_PROCESS, (id_t)tid, nice) != 0) return -errno;
#ifdef SYS_ioprio_set
  if (syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, (int)tid, (io_class << IOPRIO_CLASS_SHIFT) | io_level) != 0) return -errno;
#else
  (void)io_class;
  (void)io_level;
#endif
  return 0;
}

static int lower_other_threads(int nice, int io_class, int io_level) {
  DIR *dir = opendir("/proc/self/task");
  if (dir == NULL) return -errno;
  pid_t main_tid = getpid();
  int changed = 0;
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    pid_t tid = (pid_t)atoi(e->d_name);
    if (tid == main_tid) continue;
    int r = lower_thread(tid, nice, io_class, io_level);
    // A thread that exited since the listing is not an error.
    if (r == -ESRCH) continue;
    if (r != 0) {
      closedir(dir);
      return r;
    }
    changed++;
  }
  closedir(dir);
  return changed;
}

static napi_value lower_thread_priorities_fn(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4], result;
  int32_t nice, io_class, io_level;
  bool self;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 4 || napi_get_value_int32(env, argv[0], &nice) != napi_ok ||
      napi_get_value_int32(env, argv[1], &io_class) != napi_ok || napi_get_value_int32(env, argv[2], &io_level) != napi_ok ||
      napi_get_value_bool(env, argv[3], &self) != napi_ok || nice < -20 || nice > 19 || io_class < 0 || io_class > 3 || io_level < 0 ||
      io_level > 7)
    return ro_throw_type(env, "lowerThreadPriorities(nice -20..19, ioClass 0..3, ioLevel 0..7, self: boolean)");
  int r = self ? lower_thread((pid_t)syscall(SYS_gettid), nice, io_class, io_level) : lower_other_threads(nice, io_class, io_level);
  if (self && r == 0) r = 1;
  if (napi_create_int32(env, r, &result) != napi_ok) return NULL;
  return result;
}

int ro_register_job_priority(napi_env env, napi_value exports) {
  return ro_set_function(env, exports, "lowerThreadPriorities", lower_thread_priorities_fn);
}
