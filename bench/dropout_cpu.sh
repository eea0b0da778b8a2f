#!/usr/bin/env bash
# Reproduces bench/results/dropout-cpu/: what the fused CPU dropout kernel (cpu.dropout: fused, the
# default) saves against LibTorch's (cpu.dropout: torch), and that the two train alike (other
# draws, the same distribution). The runs and tables: bench/cpu_switch_ab.sh.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
exec "$root/bench/cpu_switch_ab.sh" cpu.dropout torch fused "${1:-$root/bench/results/dropout-cpu}"
