/*
 * The priority of a thread that runs a node's job (verify, patch rebuild) beside its reads.
 *
 * What a push does (checksumming, walking records, writing gigabytes) competes with the
 * serving threads for the cores and the disk, and on a node with few cores that shows in
 * the reads' tail latency. Linux keeps the nice value and the I/O priority per thread, so a
 * job's worker thread lowers itself as it starts; the process's other threads keep theirs
 * (a main thread waiting on a lowered V8 helper would stall its event loop).
 *
 * lowerThreadPriority(nice, ioClass, ioLevel) -> number
 *   setpriority(PRIO_PROCESS, tid, nice) and ioprio_set(IOPRIO_WHO_PROCESS, tid, class/level)
 *   for the calling thread: 0, or -errno of the call that failed. ioClass 3 (idle) needs no
 *   privilege; the block layer's scheduler honours it (mq-deadline, bfq; 'none' ignores it).
 */
#define _GNU_SOURCE
#include <errno.h>
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

static napi_value lower_thread_priority_fn(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], result;
  int32_t nice, io_class, io_level;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3 || napi_get_value_int32(env, argv[0], &nice) != napi_ok ||
      napi_get_value_int32(env, argv[1], &io_class) != napi_ok || napi_get_value_int32(env, argv[2], &io_level) != napi_ok || nice < -20 ||
      nice > 19 || io_class < 0 || io_class > 3 || io_level < 0 || io_level > 7)
    return ro_throw_type(env, "lowerThreadPriority(nice -20..19, ioClass 0..3, ioLevel 0..7)");
  if (napi_create_int32(env, lower_thread((pid_t)syscall(SYS_gettid), nice, io_class, io_level), &result) != napi_ok) return NULL;
  return result;
}

int ro_register_job_priority(napi_env env, napi_value exports) {
  return ro_set_function(env, exports, "lowerThreadPriority", lower_thread_priority_fn);
}
