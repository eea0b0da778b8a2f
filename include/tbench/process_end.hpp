#pragma once
// How the process ends when work of LibTorch's is left running past main.
#include <atomic>

namespace tbench {

// A Gloo process group given up on mid-collective is left alive (its destructor would wait for the
// collective), so its threads still run when main returns. exit()'s static destructors would then
// tear down what they may touch; such a process ends with std::_Exit once its output is flushed.
inline std::atomic<bool> g_skip_static_destructors{false};

}  // namespace tbench
