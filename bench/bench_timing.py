"""Case timing shared by the reference benchmarks (torch_ref.py, cnn_torch_ref.py,
numpy_ref.py): each case is warmed up, then timed in 5 batches of `reps` calls,
and the median batch's time per call is reported. One copy, so that the three
tools cannot drift apart in how they time what `wgt bench` compares them with."""
import statistics
import time

WARMUP = 3
BATCHES = 5


def host_ms(make, fn, reps, sync=None, warmup=WARMUP):
    """Median wall-clock ms per fn(*make()) call; sync() (if given) waits for
    queued device work before each clock read, so the host clock covers it."""
    args = make()
    for _ in range(warmup):
        fn(*args)
    if sync:
        sync()
    batches = []
    for _ in range(BATCHES):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn(*args)
        if sync:
            sync()
        batches.append((time.perf_counter() - t0) * 1e3 / reps)
    return statistics.median(batches)


def cuda_ms(make, fn, reps):
    """Median GPU ms per fn(*make()) call by CUDA events (no host launch gaps
    between batches); the case's tensors are freed after, so the next case
    starts from an empty cache."""
    import torch
    args = make()
    for _ in range(WARMUP):
        fn(*args)
    torch.cuda.synchronize()
    batches = []
    for _ in range(BATCHES):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn(*args)
        end.record()
        torch.cuda.synchronize()
        batches.append(start.elapsed_time(end) / reps)
    del args
    torch.cuda.empty_cache()
    return statistics.median(batches)
