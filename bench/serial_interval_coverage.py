#!/usr/bin/env python3
"""How often the mean's 95 % interval from a run's steps holds the true mean, where neighbouring
steps correlate (an AR(1) series: a drifting machine), under the three ways of counting the steps
that tbench has used (src/timing/stats.cpp, steady_step.cpp):

    raw        the lag-1 autocorrelation as estimated, n (1 - r) / (1 + r) independent steps
    corrected  r less its small-sample bias, (n r + 1) / (n - 3) (Marriott and Pope 1954)
    +variance  that, and the sample variance scaled by (n - 1) / (n - n / effective), since
               correlated steps spread less about their own mean (what tbench does since 2026-11-27)

    bench/serial_interval_coverage.py [REPLICATES]     (default 4000; needs numpy and scipy)

Prints a markdown table of coverage by steps and true rho; 0.95 is right, lower is overconfident."""
import sys

import numpy as np
from scipy import stats


def lag1(x):
    d = x - x.mean()
    v = (d * d).sum()
    return (d[:-1] * d[1:]).sum() / v if v > 0 else 0.0


def effective(n, rho):
    return float(n) if not rho > 0 else max(2.0, n * (1 - rho) / (1 + rho))


def covers(x, rho, scale_variance):
    n = len(x)
    ne = min(n, effective(n, rho))
    var = x.var(ddof=1)
    if scale_variance and ne < n:
        var *= (n - 1) / (n - n / ne)
    half = stats.t.ppf(0.975, ne - 1) * np.sqrt(var / ne)
    return abs(x.mean()) <= half  # the true mean is 0


def main():
    replicates = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
    rng = np.random.default_rng(20261127)
    print("| steps | true rho | raw | corrected | +variance |")
    print("|---:|---:|---:|---:|---:|")
    for n in (12, 20, 30, 60):
        for rho in (0.0, 0.3, 0.6, 0.8):
            hits = np.zeros(3)
            for _ in range(replicates):
                e = rng.standard_normal(n + 50)
                x = np.zeros(n + 50)
                for i in range(1, n + 50):
                    x[i] = rho * x[i - 1] + e[i]
                x = x[50:]  # past the start-up transient
                r = lag1(x)
                corrected = min(max((n * r + 1) / (n - 3), -1.0), 1.0)
                hits += [covers(x, r, False), covers(x, corrected, False), covers(x, corrected, True)]
            print(f"| {n} | {rho} | " + " | ".join(f"{h / replicates:.3f}" for h in hits) + " |")


if __name__ == "__main__":
    main()
