"""Benchmark of fastsoftmax.distributed: vocabulary-parallel softmax and cross-entropy over NCCL.

    torchrun --nproc-per-node 2 benchmarks/distributed_bench.py --out DIR [--quick]

Checks correctness against torch on the gathered logits first, then times per call (CUDA events
around each call, median over repetitions after warm-ups, a barrier between configurations), in
bfloat16, forward and forward+backward:

* fastsoftmax.distributed.softmax with each collective (allgather, allreduce, peer) and with rows
  chunked to L2 (allgather, chunk_rows="auto"), and with the consistency check on (check=True),
* the baseline: all-gather the logits, torch.softmax on the full rows, keep this rank's slice,
* the floor: fastsoftmax.softmax and torch.softmax on this rank's shard alone, no communication,

and cross_entropy forward+backward against all-gather + torch.nn.functional.cross_entropy. Rank 0
writes ``DIR/distributed_<device>_<date>.json`` (devices, versions, every timing) and prints a
table.
"""

from __future__ import annotations

import argparse
import datetime
import faulthandler
import json
import os
import pathlib
import statistics
import sys

# NVLink multicast (NVLS) stays off on the shared GPU machines; set before NCCL initialises.
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import fastsoftmax
import fastsoftmax.distributed as fd

VOCABS = [128256, 262144, 1048576]
ROWS = [1, 8, 64, 1024, 8192]
QUICK_VOCABS = [128256, 262144]
QUICK_ROWS = [1, 64, 8192]
DTYPE = torch.bfloat16
#: Decode sizes are also timed inside CUDA graphs, where host launch costs vanish.
GRAPHED_MAX_ROWS = 64
GOALS = {
    "8192 x 262144 split in two": "all-gather-then-softmax 18.4 ms, shard alone 2.2 ms; target: within 1.3x of "
    "the local softmax on one shard plus one small collective",
    "decode (1..64 rows x 128256)": "at most 40 us per call",
}


# --------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------


def time_call(fn, quick: bool) -> dict:
    """Median GPU time of ``fn`` per call, in microseconds, from CUDA events around each call.
    Repetitions adapt to the call's length: about 0.1 s (quick) or 0.25 s of calls, 5 to 200."""
    dist.barrier()
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    estimate_ms = max(start.elapsed_time(end), 1e-3)
    # Every rank must run the same number of calls (they meet in collectives): agree on the max.
    budget = torch.tensor([estimate_ms], device="cuda")
    dist.all_reduce(budget, op=dist.ReduceOp.MAX)
    repetitions = int(min(200, max(5, (100 if quick else 250) / float(budget))))
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repetitions)]
    dist.barrier()
    for begin, finish in events:
        begin.record()
        fn()
        finish.record()
    torch.cuda.synchronize()
    times = [begin.elapsed_time(finish) * 1e3 for begin, finish in events]
    return {"median_us": statistics.median(times), "min_us": min(times), "repetitions": repetitions}


def time_graphed(fn, quick: bool) -> dict | None:
    """``time_call`` of ``fn`` captured in a CUDA graph (the collective included), which is how a
    decoder would run it: the GPU time without the host's launch costs. None, on every rank, if
    any rank could not capture it."""
    captured = torch.ones(1, device="cuda", dtype=torch.int32)
    graph = torch.cuda.CUDAGraph()
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up on a side stream, as capture requires
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        # Nothing left for NCCL's watchdog thread to query during the capture, and its queries of
        # other streams allowed while this thread captures.
        torch.cuda.synchronize()
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            fn()
    except RuntimeError as error:  # a capture failure only drops this measurement
        print(f"rank {dist.get_rank()}: CUDA graph capture failed: {error}", flush=True)
        captured.zero_()
    dist.all_reduce(captured, op=dist.ReduceOp.MIN)  # never replay a collective a peer lacks
    if not bool(captured):
        return None
    return time_call(graph.replay, quick)


# --------------------------------------------------------------------------------------------
# The baseline: gather the logits, compute on full rows
# --------------------------------------------------------------------------------------------


class _GatherColumns(torch.autograd.Function):
    """All-gather of the shards into full rows; backward keeps this rank's slice (every rank
    computes the same full result, as tensor-parallel code does after such a gather)."""

    @staticmethod
    def forward(ctx, shard, world, rank):
        gathered = torch.empty((world,) + tuple(shard.shape), dtype=shard.dtype, device=shard.device)
        dist.all_gather_into_tensor(gathered, shard.contiguous())
        ctx.rank, ctx.width = rank, shard.shape[-1]
        return torch.cat(gathered.unbind(0), dim=-1)

    @staticmethod
    def backward(ctx, grad):
        return grad[..., ctx.rank * ctx.width : (ctx.rank + 1) * ctx.width], None, None


def gathered_softmax(shard, world, rank):
    full = torch.softmax(_GatherColumns.apply(shard, world, rank), dim=-1)
    width = shard.shape[-1]
    return full[..., rank * width : (rank + 1) * width]


def gathered_cross_entropy(shard, target, world, rank):
    return F.cross_entropy(_GatherColumns.apply(shard, world, rank), target)


# --------------------------------------------------------------------------------------------
# Correctness
# --------------------------------------------------------------------------------------------


def check_correctness(world: int, rank: int) -> list[dict]:
    results = []
    for rows, vocab in ((4, 128256), (257, 262144)):
        width = vocab // world
        generator = torch.Generator(device="cuda").manual_seed(1234 + rows)
        full = (torch.randn(rows, vocab, device="cuda", generator=generator) * 4).to(DTYPE)
        shard = full[:, rank * width : (rank + 1) * width].contiguous()
        expected = torch.softmax(full.float(), dim=-1)[:, rank * width : (rank + 1) * width]
        expected_log = torch.log_softmax(full.float(), dim=-1)[:, rank * width : (rank + 1) * width]
        for name, kwargs in variants():
            for log, reference in ((False, expected), (True, expected_log)):
                if rank == 0:
                    print(f"checking {'log_' if log else ''}softmax {name} {rows}x{vocab}", flush=True)
                out = (fd.log_softmax if log else fd.softmax)(shard, **kwargs).float()
                results.append(
                    {
                        "check": f"{'log_' if log else ''}softmax {name}",
                        "rows": rows,
                        "vocab": vocab,
                        "max_relative_error": relative_error(out, reference, 1.0 if log else 1e-30),
                    }
                )
        target = torch.randint(0, vocab, (rows,), device="cuda", generator=generator)
        reference = F.cross_entropy(full.float(), target)
        for collective in ("allgather", "allreduce"):  # "peer" serves softmax and log_softmax only
            loss = fd.cross_entropy(shard, target, collective=collective)
            results.append(
                {
                    "check": f"cross_entropy {collective}",
                    "rows": rows,
                    "vocab": vocab,
                    "max_relative_error": relative_error(loss.float(), reference, 1.0),
                }
            )
    for result in results:
        # bfloat16 keeps 8 significant bits: a relative error of 2^-8 is one rounding
        result["ok"] = result["max_relative_error"] <= 2**-7
    return results


def relative_error(actual: torch.Tensor, expected: torch.Tensor, floor: float) -> float:
    """Largest error relative to the element's magnitude (or to ``floor`` below it: log-softmax
    values near 0 are held to an absolute error)."""
    return float(((actual - expected).abs() / expected.abs().clamp(min=floor)).max())


# --------------------------------------------------------------------------------------------
# The grid
# --------------------------------------------------------------------------------------------


def variants():
    return [
        ("allgather", {"collective": "allgather", "check": False}),
        ("allreduce", {"collective": "allreduce", "check": False}),
        ("allgather+chunked", {"collective": "allgather", "chunk_rows": "auto", "check": False}),
        ("allgather+check", {"collective": "allgather", "check": True}),
        ("peer", {"collective": "peer", "check": False}),
    ]


def forward_bytes_sent(kwargs: dict, rows: int, world: int) -> int:
    """Bytes each rank sends over the interconnect in a forward call."""
    if kwargs["collective"] == "peer":  # a 16-byte slot (max, sum, epoch) a row into each other rank
        return (world - 1) * rows * 16
    if kwargs["collective"] == "allreduce":  # two all-reduces of 4 bytes per row
        return 2 * ring_bytes_sent("allreduce", rows * 4, world)
    sent = ring_bytes_sent("allgather", rows * 8, world)
    if kwargs.get("check"):
        sent += ring_bytes_sent("allgather", 10 * 8, world)
    return sent


def ring_bytes_sent(kind: str, payload: int, world: int) -> int:
    """Bytes each rank sends in a ring collective: all-gather of ``payload`` per rank, or
    all-reduce of a ``payload``-byte buffer."""
    if kind == "allgather":
        return (world - 1) * payload
    return 2 * (world - 1) * payload // world


def fits(rows: int, vocab: int, world: int) -> bool:
    # The baseline with backward holds the gathered rows, their concatenation, their softmax and
    # its gradient in bfloat16 (8 bytes per full-row element); the shard-sized tensors (input,
    # output, upstream gradient, gradient) add 8 bytes per shard element.
    need = rows * vocab * 8 + rows * (vocab // world) * 8
    free, _ = torch.cuda.mem_get_info()
    return need < 0.8 * free


def bench_shape(rows: int, vocab: int, world: int, rank: int, quick: bool) -> list[dict]:
    width = vocab // world
    x = torch.randn(rows, width, device="cuda").mul_(4).to(DTYPE)
    dy = torch.randn_like(x)
    target = torch.randint(0, vocab, (rows,), device="cuda")
    x_grad = x.detach().clone().requires_grad_()
    shard_bytes = rows * width * x.element_size()
    records = []

    def record(name, direction, timing, bytes_sent):
        records.append(
            {
                "rows": rows,
                "vocab": vocab,
                "shard_width": width,
                "name": name,
                "direction": direction,
                "bytes_sent_per_rank": bytes_sent,
                **timing,
            }
        )

    def backward_of(fn, upstream=True):
        def call():
            x_grad.grad = None  # no accumulation kernel in the timed call
            out = fn(x_grad)
            out.backward(dy if upstream else None)

        return call

    floors = {
        "local fastsoftmax.softmax (shard alone)": lambda t: fastsoftmax.softmax(t, -1),
        "local torch.softmax (shard alone)": lambda t: torch.softmax(t, -1),
    }
    for name, fn in floors.items():
        record(name, "forward", time_call(lambda fn=fn: fn(x), quick), 0)
        record(name, "forward+backward", time_call(backward_of(fn), quick), 0)

    for name, kwargs in variants():
        fn = lambda t, kwargs=kwargs: fd.softmax(t, **kwargs)
        forward_bytes = forward_bytes_sent(kwargs, rows, world)
        backward_bytes = ring_bytes_sent("allreduce", rows * 4, world)
        record(f"distributed softmax [{name}]", "forward", time_call(lambda fn=fn: fn(x), quick), forward_bytes)
        record(
            f"distributed softmax [{name}]",
            "forward+backward",
            time_call(backward_of(fn), quick),
            forward_bytes + backward_bytes,
        )

    if rows <= GRAPHED_MAX_ROWS:
        for name, kwargs in variants():
            if name not in ("allgather", "allreduce", "peer"):
                continue
            timing = time_graphed(lambda kwargs=kwargs: fd.softmax(x, **kwargs), quick)
            if timing is not None:
                record(
                    f"distributed softmax [{name}, CUDA graph]",
                    "forward",
                    timing,
                    forward_bytes_sent(kwargs, rows, world),
                )
        timing = time_graphed(lambda: fastsoftmax.softmax(x, -1), quick)
        if timing is not None:
            record("local fastsoftmax.softmax (shard alone, CUDA graph)", "forward", timing, 0)

    baseline = lambda t: gathered_softmax(t, world, rank)
    gather_bytes = ring_bytes_sent("allgather", shard_bytes, world)
    record("all-gather + torch.softmax (baseline)", "forward", time_call(lambda: baseline(x), quick), gather_bytes)
    record(
        "all-gather + torch.softmax (baseline)",
        "forward+backward",
        time_call(backward_of(baseline), quick),
        gather_bytes,
    )

    start = rank * width
    ce = lambda t: fd.cross_entropy(t, target, vocab_start=start, vocab_size=vocab, check=False)
    record(
        "distributed cross_entropy [allgather]",
        "forward+backward",
        time_call(backward_of(ce, upstream=False), quick),
        ring_bytes_sent("allgather", rows * 16, world),
    )
    ce_reduce = lambda t: fd.cross_entropy(
        t, target, vocab_start=start, vocab_size=vocab, check=False, collective="allreduce"
    )
    record(
        "distributed cross_entropy [allreduce]",
        "forward+backward",
        time_call(backward_of(ce_reduce, upstream=False), quick),
        ring_bytes_sent("allreduce", rows * 4, world) + ring_bytes_sent("allreduce", rows * 12, world),
    )
    ce_base = lambda t: gathered_cross_entropy(t, target, world, rank)
    record(
        "all-gather + F.cross_entropy (baseline)",
        "forward+backward",
        time_call(backward_of(ce_base, upstream=False), quick),
        gather_bytes,
    )

    floor = {r["direction"]: r["median_us"] for r in records if r["name"] == "local fastsoftmax.softmax (shard alone)"}
    for r in records:
        r["ratio_to_local_fastsoftmax"] = (
            r["median_us"] / floor[r["direction"] if r["direction"] in floor else "forward+backward"]
        )
    return records


def versions() -> dict:
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    nccl = torch.cuda.nccl.version()
    return {
        "torch": torch.__version__,
        "triton": triton_version,
        "cuda": torch.version.cuda,
        "nccl": ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl),
    }


def print_table(records: list[dict]) -> None:
    print(
        f"{'rows':>5} {'vocab':>8} {'direction':<17} {'implementation':<44} {'us':>10} {'x local':>8} "
        f"{'bytes sent':>12}"
    )
    for r in records:
        print(
            f"{r['rows']:>5} {r['vocab']:>8} {r['direction']:<17} {r['name']:<44} {r['median_us']:>10.1f} "
            f"{r['ratio_to_local_fastsoftmax']:>8.2f} {r['bytes_sent_per_rank']:>12}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder for the JSON result")
    parser.add_argument("--quick", action="store_true", help="fewer shapes and repetitions")
    args = parser.parse_args()

    # A rank that stops making progress prints where every thread is, every 90 s, so that a run
    # cut by a time limit still says where it stood.
    faulthandler.dump_traceback_later(90, repeat=True)
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if not torch.cuda.is_available() or torch.cuda.device_count() <= local_rank:
        raise SystemExit(
            f"distributed_bench.py: each rank needs a CUDA GPU of its own (NCCL); rank {local_rank} has none "
            "(on the CPU, tests/distributed/test_distributed_gloo.py checks the same functions)"
        )
    torch.cuda.set_device(local_rank)
    # initialised as the NCCL tests do (lazily, without device_id): with an eager communicator the
    # run on two H200s printed nothing in 300 s, where the tests pass in seconds
    dist.init_process_group("nccl")
    world, rank = dist.get_world_size(), dist.get_rank()
    started = datetime.datetime.now(datetime.timezone.utc)
    print(f"rank {rank} of {world}: process group up on cuda:{local_rank}", flush=True)

    checks = check_correctness(world, rank)
    if rank == 0:
        for check in checks:
            print(
                f"check {check['check']:<32} {check['rows']}x{check['vocab']}: max relative error "
                f"{check['max_relative_error']:.2e} {'ok' if check['ok'] else 'FAILED'}"
            )

    device = torch.cuda.get_device_name().lower().replace(" ", "-")
    path = pathlib.Path(args.out) / f"distributed_{device}_{started.strftime('%Y-%m-%dT%H-%M-%S')}.json"

    def write(records: list[dict], complete: bool) -> None:
        # Rewritten after every shape, so that a run cut short keeps what it measured.
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps(
                {
                    "date": started.isoformat(),
                    "complete": complete,
                    "world_size": world,
                    "devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())],
                    "versions": versions(),
                    "dtype": str(DTYPE),
                    "quick": args.quick,
                    "goals": GOALS,
                    "checks": checks,
                    "timings": records,
                },
                indent=1,
            )
        )

    records = []
    for vocab in QUICK_VOCABS if args.quick else VOCABS:
        for rows in QUICK_ROWS if args.quick else ROWS:
            fit = torch.tensor([fits(rows, vocab, world)], device="cuda", dtype=torch.int32)
            dist.all_reduce(fit, op=dist.ReduceOp.MIN)  # every rank skips the same shapes
            if not bool(fit):
                if rank == 0:
                    print(f"skip {rows}x{vocab}: does not fit in memory")
                continue
            records += bench_shape(rows, vocab, world, rank, args.quick)
            torch.cuda.empty_cache()
            if rank == 0:
                write(records, complete=False)
                print(f"done {rows}x{vocab}", flush=True)

    if rank == 0:
        print()
        print_table(records)
        print()
        print("Goals:")
        for what, goal in GOALS.items():
            print(f"  {what}: {goal}")
        write(records, complete=True)
        print(f"wrote {path}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
