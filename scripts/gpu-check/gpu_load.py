"""Holds GPU memory and keeps the GPU busy with bf16 matrix products until its
parent dies or the deadline passes; writes what the process sees to a file."""
import os, sys, time
record, seconds, gib = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
parent = os.getppid()
deadline = time.time() + seconds
with open(record, "a") as f:
    f.write(f"pid={os.getpid()} pgid={os.getpgid(0)} CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r}\n")
    try:
        import torch
    except ImportError:
        f.write("no torch: sleeping instead\n"); f.flush()
        while time.time() < deadline and os.getppid() == parent:
            time.sleep(0.2)
        sys.exit(0)
    f.write(f"torch {torch.__version__} sees {torch.cuda.device_count()} device(s): "
            f"{[torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]}\n"); f.flush()
    hold = torch.empty(int(gib * (1 << 30)), dtype=torch.uint8, device="cuda")
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    n = 0
    while time.time() < deadline and os.getppid() == parent:
        for _ in range(20):
            a = (a @ a).clamp_(-1, 1)
        torch.cuda.synchronize(); n += 20
    f.write(f"ran {n} products\n")
