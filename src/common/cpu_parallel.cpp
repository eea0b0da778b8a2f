#include "tbench/cpu_parallel.hpp"

#include <algorithm>

#include <ATen/Parallel.h>
#include <ATen/TensorIterator.h>
#include <torch/torch.h>

namespace tbench {

void cpu_parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks = (n + grain - 1) / grain;
  if (chunks == 1 || at::get_num_threads() == 1 || at::in_parallel_region()) {
    body(0, n);
    return;
  }
  // One byte per chunk: TensorIterator splits this tensor among the threads, and the address it
  // hands each thread says which chunks are that thread's. The bytes are never read or written.
  auto handles = at::empty({chunks}, at::TensorOptions().dtype(at::kByte));
  const char* first = static_cast<const char*>(handles.data_ptr());
  auto iter = at::TensorIteratorConfig().add_output(handles).check_all_same_dtype(false).resize_outputs(false).build();
  iter.for_each(
      [&](char** data, const int64_t* strides, int64_t size0, int64_t size1) {
        // A 1-D byte tensor: TensorIterator hands each thread one run of consecutive bytes.
        TORCH_INTERNAL_ASSERT(size1 == 1 && strides[0] == 1, "cpu_parallel_for: unexpected iteration shape");
        const int64_t chunk = data[0] - first, count = size0;
        body(chunk * grain, std::min(n, (chunk + count) * grain));
      },
      /*grain_size=*/1);
}

}  // namespace tbench
