#!/usr/bin/env bash
# Reproduces bench/results/adamw-onepass-cpu/: what tbench's one-pass CPU AdamW
# (train.optimizer_impl: onepass, what auto is on CPU before torch 2.4) saves against the multi-tensor foreach ops,
# and that the two train alike (the same update, rounded once per element instead of once per op).
# The runs and tables: bench/cpu_switch_ab.sh.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
exec "$root/bench/cpu_switch_ab.sh" train.optimizer_impl foreach onepass "${1:-$root/bench/results/adamw-onepass-cpu}"
