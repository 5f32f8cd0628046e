"""Two backward_bench.py text outputs side by side (the same ops, dtypes and rows): forward+backward in ms, each
one's ratio to torch.compile, the backward alone as a share of a copy, and new/old of the backward alone (the
forward is the same in both packages, so the backward alone is the comparison that moves least between runs).
Where both ran with --graphs, also new/old of forward+backward replayed from CUDA graphs: the GPU's time, which the
host's does not move (stop 70: a step of one op takes the host 0.5-1 ms, more than many backwards take the GPU, and
then the eager figures, the backward alone's too, time the host).
Usage: python docs/device/ab_compare_bwd.py OLD.txt NEW.txt"""
import re
import statistics
import sys

LINE = re.compile(r"(\w+)\s+(\w+)\s+(\d+) fwd\+bwd ours ([\d.]+) ms, (?:.*?, )?compile ([\d.]+): ([\d.]+)x compile"
                  r"(?:, [^;]*)?; bwd alone ([\d.]+) ms = (\d+)% of a copy(?:; graphs: ours ([\d.]+), compile ([\d.]+) ms)?")


def load(path):
    return {m.groups()[:3]: m.groups()[3:] for m in map(LINE.match, open(path)) if m}


old, new = load(sys.argv[1]), load(sys.argv[2])
print(f"{'op':12s} {'dtype':9s} {'cols':>6s} {'old ms':>7s} {'new ms':>7s} {'old x':>6s} {'new x':>6s}"
      f" {'bwd old':>8s} {'bwd new':>8s} {'bwd new/old':>11s}")
ratios, graphed = [], []
for key, (ms, _, x, bwd, share, ours_graph, _) in old.items():
    if key in new:
        ms2, _, x2, bwd2, share2, ours_graph2, _ = new[key]
        ratios.append(float(bwd2) / float(bwd))
        both = ours_graph is not None and ours_graph2 is not None
        if both:
            graphed.append(float(ours_graph2) / float(ours_graph))
        print(f"{key[0]:12s} {key[1]:9s} {key[2]:>6s} {ms:>7s} {ms2:>7s} {x:>5s}x {x2:>5s}x {share:>7s}% {share2:>7s}%"
              f" {ratios[-1]:11.3f}" + (f"  graphed fwd+bwd new/old {graphed[-1]:.3f}" if both else ""))
if graphed:
    print(f"graphed fwd+bwd new/old: median {statistics.median(graphed):.3f}, min {min(graphed):.3f}, max {max(graphed):.3f},"
          f" {sum(r < 0.97 for r in graphed)} faster by 3% or more, {sum(r > 1.03 for r in graphed)} slower")
print(f"backward alone new/old: median {statistics.median(ratios):.3f}, min {min(ratios):.3f}, max {max(ratios):.3f},"
      f" {sum(r < 0.97 for r in ratios)} faster by 3% or more, {sum(r > 1.03 for r in ratios)} slower")
