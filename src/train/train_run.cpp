#include "tbench/train/train_run.hpp"

namespace tbench {

const char* to_string(RunStatus s) {
  switch (s) {
    case RunStatus::completed: return "completed";
    case RunStatus::interrupted: return "interrupted";
    case RunStatus::failed: return "failed";
  }
  return "?";
}

}  // namespace tbench
