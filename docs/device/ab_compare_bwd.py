"""Two backward_bench.py text outputs side by side (the same ops, dtypes and rows): forward+backward in ms, each
one's ratio to torch.compile, the backward alone as a share of a copy, and new/old of the backward alone (the
forward is the same in both packages, so the backward alone is the comparison that moves least between runs).
Usage: python docs/device/ab_compare_bwd.py OLD.txt NEW.txt"""
import re
import statistics
import sys

LINE = re.compile(r"(\w+)\s+(\w+)\s+(\d+) fwd\+bwd ours ([\d.]+) ms, (?:.*?, )?compile ([\d.]+): ([\d.]+)x compile"
                  r"(?:, [^;]*)?; bwd alone ([\d.]+) ms = (\d+)% of a copy")


def load(path):
    return {m.groups()[:3]: m.groups()[3:] for m in map(LINE.match, open(path)) if m}


old, new = load(sys.argv[1]), load(sys.argv[2])
print(f"{'op':12s} {'dtype':9s} {'cols':>6s} {'old ms':>7s} {'new ms':>7s} {'old x':>6s} {'new x':>6s}"
      f" {'bwd old':>8s} {'bwd new':>8s} {'bwd new/old':>11s}")
ratios = []
for key, (ms, _, x, bwd, share) in old.items():
    if key in new:
        ms2, _, x2, bwd2, share2 = new[key]
        ratios.append(float(bwd2) / float(bwd))
        print(f"{key[0]:12s} {key[1]:9s} {key[2]:>6s} {ms:>7s} {ms2:>7s} {x:>5s}x {x2:>5s}x {share:>7s}% {share2:>7s}%"
              f" {ratios[-1]:11.3f}")
print(f"backward alone new/old: median {statistics.median(ratios):.3f}, min {min(ratios):.3f}, max {max(ratios):.3f},"
      f" {sum(r < 0.97 for r in ratios)} faster by 3% or more, {sum(r > 1.03 for r in ratios)} slower")
