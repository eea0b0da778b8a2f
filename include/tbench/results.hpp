#pragma once
// Turning records into files: the JSONL stream written as steps finish, the summary, and the
// result JSON written atomically at the end.
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tbench/records.hpp"
#include "tbench/trainer.hpp"

namespace tbench {

inline constexpr const char* kResultSchemaId = "tbench.result/1";

// results/x.json -> results/x.iterations.jsonl
std::string iterations_path_for(const std::string& result_path);

// Refuses (exit 3) to overwrite an existing result or stream unless `force`.
void ensure_writable(const std::string& result_path, bool force);

// Writes `text` to a temporary file beside `path`, flushes it to disk, then renames it over
// `path`: readers see the old file or the whole new one, never half of it.
void write_file_atomically(const std::string& path, const std::string& text);

// Appends each iteration record to a JSONL file as soon as it is made, flushed line by line,
// so a crash or kill loses at most the step in flight.
class IterationStream : public TrainObserver {
 public:
  explicit IterationStream(const std::string& path);
  void on_iteration(const IterationRecord& record) override;

 private:
  std::string path_;
  std::ofstream out_;
};

// Keeps every record for the summary and the result file.
class Recorder : public TrainObserver {
 public:
  void on_iteration(const IterationRecord& record) override { iterations.push_back(record); }
  void on_epoch_end(const EpochRecord& record) override { epochs.push_back(record); }

  std::vector<IterationRecord> iterations;
  std::vector<EpochRecord> epochs;
};

struct SummaryInputs {
  int64_t warmup_steps = 0;       // requested by timing.warmup_steps
  int64_t steps_per_epoch = 0;
  double train_flops_per_sample = 0;
  std::string started_at, ended_at;
  double wall_seconds = 0;
  RunStatus status = RunStatus::completed;
  std::string error;
  std::string timing_method;  // TrainOutcome::timing_method
};

// The timing check: the sum of step times may fall short of the epochs' wall time only by the
// work between steps. A gap beyond this fraction means time escapes the step timer.
inline constexpr double kTimingGapMargin = 0.02;

// Step-time spread and throughput over the steady-state steps (warm-up excluded), epoch times
// as seconds and mm:ss, and the projected full-epoch time from the steady-state step time.
nlohmann::json summarize(const Recorder& recorder, const SummaryInputs& inputs);

// Local time as ISO 8601 with offset, e.g. 2026-11-22T14:03:11+01:00.
std::string iso8601_now();
// Compact timestamp for file names, e.g. 20261122-140311.
std::string file_timestamp_now();

}  // namespace tbench
