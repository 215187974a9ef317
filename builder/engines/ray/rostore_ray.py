"""rostore's build on a Ray cluster: the thin driver behind `rostore build --engine ray`.

The Node side (builder/engines/ray/ray-build.ts) has already written the job spec (the
same `rostore-job.json` the Hadoop engine uses) into a job directory on storage every
node can reach. This driver only moves data and schedules; the work inside every task is
the rostore CLI, the same map / reduce code as the local and Hadoop engines:

  map task     one input split (a byte range of a TSV/CSV/JSON lines file, or row groups /
               record batches of a Parquet/Arrow file) -> `rostore hadoop map` -> shuffle
               lines, partitioned by reducer (Hadoop's KeyFieldBasedPartitioner on the
               (node, chunk) bucket) into one Ray object per reducer (num_returns)
  reduce task  its partition of every map task -> `LC_ALL=C sort` (spills to disk) ->
               `rostore hadoop reduce` -> chunk files committed into the output
               directory, statistics lines returned to the driver
  driver       writes the statistics to <job dir>/stats/; Node runs finalize and renames
               the finished output into place

The driver holds object references and statistics, never the data. Tasks are retried by
Ray when a node dies (max_retries), and their lost outputs rebuilt from lineage; an error
raised by rostore itself (bad input) is not retried. Progress goes to stderr as lines
starting with "ray:", the job summary to <job dir>/summary.json, a failure to
<job dir>/error.json. Only the standard library and ray are imported.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

import ray

# Test hook (documented in docs/DISTRIBUTED.md): with ROSTORE_RAY_HOLD=<dir> and
# ROSTORE_RAY_HOLD_PHASE=map|reduce in the driver's environment, the first attempt of a
# task of that phase does its work, writes its pid to <dir>/held-<phase>/pid and waits
# there (until <dir>/held-<phase>/release exists), so a test can kill its node at a
# known point of the job.
HOLD_MAX_SECONDS = 300


def java_field_partition(field, reducers):
    """Hadoop's KeyFieldBasedPartitioner over one key field, as in partitioner.ts."""
    h = 0
    for b in field:
        if b >= 128:
            b -= 256
        h = (31 * h + b) & 0xFFFFFFFF
    return (h & 0x7FFFFFFF) % reducers


def run_rostore(task_command, args, env, stdin_path, stdout_path, what):
    with open(stdin_path, "rb") as fin, open(stdout_path, "wb") as fout:
        p = subprocess.run(task_command + args, stdin=fin, stdout=fout, stderr=subprocess.PIPE, env=env)
    if p.returncode != 0:
        err = p.stderr.decode("utf8", "replace").strip().splitlines()
        last = [l for l in err if l.startswith("rostore:")]
        raise RostoreTaskError(what, (last[-1] if last else "\n".join(err[-10:])) or f"exit status {p.returncode}")


class RostoreTaskError(Exception):
    """rostore itself refused the task (bad input, bad job): retrying would not help.
    args are (what, message) so that the exception pickles back to the driver as it is."""

    def __str__(self):
        return f"{self.args[0]}: {self.args[1]}"


def mark(markers, phase, index, attempt):
    # One file per attempt: the driver counts retries from them, tests follow the job.
    with open(os.path.join(markers, f"{phase}-{index:06d}-{attempt}"), "w") as f:
        f.write(f"{os.getpid()}\n")


def maybe_hold(hold, phase):
    if hold is None or hold["phase"] != phase:
        return
    held = os.path.join(hold["dir"], f"held-{phase}")
    try:
        os.mkdir(held)
    except FileExistsError:
        return  # only the first attempt of the phase waits
    with open(os.path.join(held, "pid.tmp"), "w") as f:
        f.write(f"{os.getpid()}\n")
    os.rename(os.path.join(held, "pid.tmp"), os.path.join(held, "pid"))
    deadline = time.monotonic() + HOLD_MAX_SECONDS
    while time.monotonic() < deadline and not os.path.exists(os.path.join(held, "release")):
        time.sleep(0.2)


def write_text_split(path, start, end, out):
    """Lines that start in [start, end), as "<byte offset>\\t<line>\\n" (the mapper's stdin)."""
    count = 0
    with open(path, "rb") as f:
        pos = start
        if start > 0:
            f.seek(start - 1)
            if f.read(1) != b"\n":
                pos = start + len(f.readline())  # the line began in the previous split
        else:
            f.seek(0)
        while pos < end:
            line = f.readline()
            if not line:
                break
            body = line[:-1] if line.endswith(b"\n") else line
            out.write(b"%d\t%s\n" % (pos, body))
            pos += len(line)
            count += 1
    return count


@ray.remote(max_retries=4, retry_exceptions=False)
def map_task(index, split, job_dir, task_command, reducers, hold):
    attempt = uuid.uuid4().hex[:12]
    mark(os.path.join(job_dir, "tasks"), "map", index, attempt)
    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="rostore-ray-map-")
    try:
        spec = os.path.join(job_dir, "rostore-job.json")
        env = dict(os.environ)
        env["mapreduce_task_attempt_id"] = f"attempt_ray_m_{index:06d}_{int(attempt[:8], 16)}"
        env["mapreduce_task_id"] = f"task_ray_m_{index:06d}"
        env["stream_map_input_ignoreKey"] = "false"
        stdin_path = os.path.join(tmp, "in")
        args = ["hadoop", "map", "--job", spec]
        with open(stdin_path, "wb") as out:
            if split["kind"] == "text":
                env["mapreduce_map_input_file"] = split["path"]
                if is_s3(split["path"]):
                    # rostore reads the range from S3 itself, with this node's AWS_* settings.
                    args += ["--range", f"{split['start']}-{split['end']}"]
                else:
                    write_text_split(split["path"], split["start"], split["end"], out)
            else:
                out.write(split["line"].encode("utf8") + b"\n")
        stdout_path = os.path.join(tmp, "out")
        t_cli = time.monotonic()
        run_rostore(task_command, args, env, stdin_path, stdout_path, f"map task {index}")
        cli_seconds = time.monotonic() - t_cli
        parts = [[] for _ in range(reducers)]
        cache = {}
        records = 0
        shuffle_bytes = 0
        with open(stdout_path, "rb") as f:
            for line in f:
                dot = line.find(b".")
                field = line[:dot] if dot >= 0 else line[: line.find(b"\t")]
                r = cache.get(field)
                if r is None:
                    r = cache[field] = java_field_partition(field, reducers)
                parts[r].append(line)
                shuffle_bytes += len(line)
                if field == b"stats":
                    stats = json.loads(line[line.find(b"\t") + 1 :])
                    records = stats["records"]
        maybe_hold(hold, "map")
        info = {
            "index": index,
            "records": records,
            "bytes": split["bytes"],
            "shuffleBytes": shuffle_bytes,
            "seconds": time.monotonic() - started,
            "rostoreSeconds": cli_seconds,
            "node": ray.get_runtime_context().get_node_id(),
        }
        return [b"".join(p) for p in parts] + [info]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@ray.remote(max_retries=4, retry_exceptions=False)
def reduce_task(index, job_dir, task_command, sort_mb, hold, *parts):
    attempt = uuid.uuid4().hex[:12]
    mark(os.path.join(job_dir, "tasks"), "reduce", index, attempt)
    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="rostore-ray-reduce-")
    try:
        unsorted = os.path.join(tmp, "in")
        size = 0
        with open(unsorted, "wb") as f:
            for p in parts:
                f.write(p)
                size += len(p)
        output = b""
        sort_seconds = 0.0
        cli_seconds = 0.0
        if size > 0:
            t_sort = time.monotonic()
            sorted_path = os.path.join(tmp, "sorted")
            env = dict(os.environ, LC_ALL="C")
            p = subprocess.run(
                ["sort", "-S", f"{sort_mb}M", "-T", tmp, "-o", sorted_path, unsorted], env=env, stderr=subprocess.PIPE
            )
            if p.returncode != 0:
                raise RuntimeError(f"reduce task {index}: sort failed: {p.stderr.decode('utf8', 'replace').strip()}")
            os.unlink(unsorted)
            sort_seconds = time.monotonic() - t_sort
            env = dict(os.environ)
            env["mapreduce_task_attempt_id"] = f"attempt_ray_r_{index:06d}_{int(attempt[:8], 16)}"
            env["mapreduce_task_id"] = f"task_ray_r_{index:06d}"
            stats_path = os.path.join(tmp, "stats")
            spec = os.path.join(job_dir, "rostore-job.json")
            t_cli = time.monotonic()
            run_rostore(task_command, ["hadoop", "reduce", "--job", spec], env, sorted_path, stats_path, f"reduce task {index}")
            cli_seconds = time.monotonic() - t_cli
            with open(stats_path, "rb") as f:
                output = f.read()
        maybe_hold(hold, "reduce")
        info = {
            "index": index,
            "shuffleBytes": size,
            "seconds": time.monotonic() - started,
            "sortSeconds": sort_seconds,
            "rostoreSeconds": cli_seconds,
        }
        return output, info
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def is_s3(path):
    return path[:5].lower() == "s3://"


def input_sizes(job, job_dir):
    """Bytes of each input: from input-sizes.json (written by Node, which listed s3:// inputs), else stat."""
    try:
        with open(os.path.join(job_dir, "input-sizes.json"), encoding="utf8") as f:
            return dict(zip(job["inputs"], json.load(f)))
    except FileNotFoundError:
        return {p: os.stat(p).st_size for p in job["inputs"]}


def plan_splits(job, job_dir, split_bytes):
    sizes = input_sizes(job, job_dir)
    if job["format"] in ("parquet", "arrow"):
        with open(os.path.join(job_dir, "inputs.txt"), encoding="utf8") as f:
            lines = [l for l in f.read().split("\n") if l.strip() != ""]
        out = []
        for line in lines:
            path = line.split("\t")[-1]
            # Bytes of a row-group range are unknown here: the whole file is counted once.
            out.append({"kind": "columnar", "line": line, "bytes": 0, "path": path})
        seen = set()
        for s in out:
            if s["path"] not in seen:
                seen.add(s["path"])
                s["bytes"] = sizes[s["path"]] if s["path"] in sizes else os.stat(s["path"]).st_size
        return out
    out = []
    for path in job["inputs"]:
        size = sizes[path]
        start = 0
        while start < size:
            end = min(size, start + split_bytes)
            out.append({"kind": "text", "path": path, "start": start, "end": end, "bytes": end - start})
            start = end
    return out


def spilled_mib():
    """MiB spilled by the cluster so far (Ray's memory summary needs grpcio), or None."""
    try:
        from ray._private.internal_api import memory_summary

        m = re.search(r"Spilled (\d+) MiB", memory_summary(stats_only=True))
        return int(m.group(1)) if m else 0
    except Exception:  # the figure is informative only
        return None


def spilled_delta(before, after):
    return None if before is None or after is None else after - before


def count_attempts(job_dir, phase):
    return sum(1 for n in os.listdir(os.path.join(job_dir, "tasks")) if n.startswith(phase + "-"))


def progress(line):
    sys.stderr.write(f"ray: {line}\n")
    sys.stderr.flush()


def human(n):
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1000.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--job-dir", required=True)
    ap.add_argument("--task-command", required=True, help="JSON array: how tasks start rostore")
    ap.add_argument("--address", default=None)
    ap.add_argument("--split-bytes", type=int, default=64 << 20)
    ap.add_argument("--sort-mb", type=int, default=256)
    a = ap.parse_args()
    if a.split_bytes < 1 or a.sort_mb < 1:
        ap.error("--split-bytes and --sort-mb must be positive")
    job_dir = os.path.abspath(a.job_dir)
    task_command = json.loads(a.task_command)
    with open(os.path.join(job_dir, "rostore-job.json"), encoding="utf8") as f:
        job = json.load(f)
    reducers = job["reducers"]
    os.makedirs(os.path.join(job_dir, "tasks"), exist_ok=True)
    os.makedirs(os.path.join(job_dir, "stats"), exist_ok=True)
    t0 = time.monotonic()
    try:
        ray.init(address=a.address, logging_level="WARNING", log_to_driver=False, include_dashboard=False)
    except Exception as e:
        fail(job_dir, "RO_UNAVAILABLE", f"cannot connect to the Ray cluster ({a.address or 'auto'}): {e}")
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    cpus = int(ray.cluster_resources().get("CPU", 0))
    splits = plan_splits(job, job_dir, a.split_bytes)
    total_bytes = sum(s["bytes"] for s in splits)
    progress(f"{len(nodes)} nodes, {cpus} CPUs; {len(splits)} map tasks over {human(total_bytes)}, {reducers} reduce tasks")
    spilled_before = spilled_mib()
    t_connect = time.monotonic()

    hold = None
    if os.environ.get("ROSTORE_RAY_HOLD", "") != "":
        hold = {"dir": os.environ["ROSTORE_RAY_HOLD"], "phase": os.environ.get("ROSTORE_RAY_HOLD_PHASE", "map")}
    maps = [map_task.options(num_returns=reducers + 1).remote(i, s, job_dir, task_command, reducers, hold) for i, s in enumerate(splits)]
    map_info_refs = [m[reducers] for m in maps]
    map_ref_set = set(map_info_refs)
    reduces = [reduce_task.remote(r, job_dir, task_command, a.sort_mb, hold, *[m[r] for m in maps]) for r in range(reducers)]
    del maps  # the reduce tasks hold the partitions now; the driver keeps only what it waits on

    map_done = {}
    reduce_done = {}
    pending = {ref: ("map", i) for i, ref in enumerate(map_info_refs)}
    pending.update({ref: ("reduce", r) for r, ref in enumerate(reduces)})
    records = 0
    shuffle = 0
    read_bytes = 0
    t_map_end = None
    last_print = 0.0
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
            for ref in ready:
                phase, i = pending.pop(ref)
                if phase == "map":
                    info = ray.get(ref)
                    map_done[i] = info
                    records += info["records"]
                    read_bytes += info["bytes"]
                    shuffle += info["shuffleBytes"]
                else:
                    output, info = ray.get(ref)
                    with open(os.path.join(job_dir, "stats", f"part-{i:05d}"), "wb") as f:
                        f.write(output)
                    reduce_done[i] = info
            if t_map_end is None and len(map_done) == len(splits):
                t_map_end = time.monotonic()
            now = time.monotonic()
            if ready or now - last_print > 2:
                last_print = now
                rate = read_bytes / max(0.001, now - t_connect)
                maps_ready = any(ref in map_ref_set for ref in ready)
                if len(map_done) < len(splits) or maps_ready:
                    progress(
                        f"map {len(map_done)}/{len(splits)} tasks, {records:,} records, {human(read_bytes)} read, {human(rate)}/s"
                    )
                if len(map_done) == len(splits):
                    progress(f"reduce {len(reduce_done)}/{reducers} tasks, {human(shuffle)} shuffled")
    except Exception as e:
        cause = getattr(e, "cause", None)
        # The class arrives pickled by value: compare by name, not identity.
        if cause is not None and type(cause).__name__ == "RostoreTaskError" and len(cause.args) == 2:
            m = re.match(r"^rostore: (.*) \[(RO_[A-Z_]+)\]$", cause.args[1])
            if m:
                fail(job_dir, m.group(2), f"{cause.args[0]}: {m.group(1)}")
        fail(job_dir, "RO_UNAVAILABLE", f"the Ray job failed: {cause if cause is not None else e}")
    t_end = time.monotonic()
    map_attempts = count_attempts(job_dir, "map")
    reduce_attempts = count_attempts(job_dir, "reduce")
    summary = {
        "nodes": len(nodes),
        "cpus": cpus,
        "mapTasks": len(splits),
        "reduceTasks": reducers,
        "mapAttempts": map_attempts,
        "reduceAttempts": reduce_attempts,
        "retries": map_attempts + reduce_attempts - len(splits) - reducers,
        "records": records,
        "inputBytes": read_bytes,
        "shuffleBytes": shuffle,
        "spilledMiB": spilled_delta(spilled_before, spilled_mib()),
        "seconds": {
            "connect": t_connect - t0,
            "map": (t_map_end or t_end) - t_connect,
            "reduce": t_end - (t_map_end or t_end),
            "mapTaskSum": sum(i["seconds"] for i in map_done.values()),
            "mapRostoreSum": sum(i["rostoreSeconds"] for i in map_done.values()),
            "reduceTaskSum": sum(i["seconds"] for i in reduce_done.values()),
            "reduceSortSum": sum(i["sortSeconds"] for i in reduce_done.values()),
            "reduceRostoreSum": sum(i["rostoreSeconds"] for i in reduce_done.values()),
        },
    }
    with open(os.path.join(job_dir, "summary.json"), "w", encoding="utf8") as f:
        json.dump(summary, f)
    ray.shutdown()


def fail(job_dir, code, message):
    with open(os.path.join(job_dir, "error.json"), "w", encoding="utf8") as f:
        json.dump({"code": code, "message": message}, f)
    progress(f"failed: {message}")
    try:
        ray.shutdown()
    finally:
        os._exit(2)


if __name__ == "__main__":
    main()
