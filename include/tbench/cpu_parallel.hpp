#pragma once
// tbench's own CPU kernels (dropout, the residual LayerNorm pass, AdamW) split their loops over
// LibTorch's intra-op threads with this, not with at::parallel_for.
//
// Why: at::parallel_for is inline, and in an OpenMP build of LibTorch (Debian's, PyTorch's wheels)
// it parallelises only in a file compiled with -fopenmp; anywhere else it quietly runs the whole
// range on the calling thread. Compiling tbench with -fopenmp would bind its loops to the
// compiler's OpenMP runtime, which need not be the one LibTorch carries (the wheels bring their own
// libgomp), so at::set_num_threads would not reach them. This helper instead hands the split to
// TensorIterator::for_each, compiled inside LibTorch: its threads, its thread count, and a serial
// run inside an already parallel region.
#include <cstdint>
#include <functional>

namespace tbench {

// Calls body(begin, end) on disjoint ranges that cover [0, n) exactly once, each range (but the
// last) a multiple of `grain` elements long, on up to at::get_num_threads() threads. Returns when
// all are done; an exception from a body is rethrown on the caller's thread.
// `body` runs concurrently on several threads (so it must not mutate shared state unguarded), and
// on LibTorch's worker threads, which do not inherit the caller's grad mode or autocast state:
// bodies work on raw data, not through autograd.
void cpu_parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& body);

}  // namespace tbench
