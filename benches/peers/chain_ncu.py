"""Runs torch.compile's x*2 chain (alternating x2 and x0.5, R=256) over 1 GiB f32 a few
times, for profiling its generated kernel with Nsight Compute next to tilekit's:

    ncu -k regex:triton --launch-skip 3 --launch-count 1 --section SpeedOfLight \
        --section SchedulerStats --section WarpStateStats --section Occupancy \
        python3 benches/peers/chain_ncu.py
"""
import torch

R = 256
N = 1 << 28


def chain(x):
    for i in range(R):
        x = x * (2.0 if i % 2 == 0 else 0.5)
    return x


def main():
    x = torch.randn(N, device="cuda")
    f = torch.compile(chain)
    for _ in range(6):
        y = f(x)
    torch.cuda.synchronize()
    print("max |y - x*2^(R%2)|:", (y - x * (2.0 if R % 2 else 1.0)).abs().max().item())


if __name__ == "__main__":
    main()
