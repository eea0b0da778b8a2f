#pragma once
// A result on disk: where its files go, the JSONL stream written as steps finish, and the
// refusal to overwrite a result unless asked.
#include <fstream>
#include <string>

#include "tbench/files.hpp"
#include "tbench/train/train_run.hpp"

namespace tbench {

// results/x.json -> results/x.iterations.jsonl
std::string iterations_path_for(const std::string& result_path);

// Refuses (exit 3) to overwrite an existing result or stream unless `force`.
void ensure_writable(const std::string& result_path, bool force);

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

// Local time as ISO 8601 with offset, e.g. 2026-11-22T14:03:11+01:00.
std::string iso8601_now();
// Compact timestamp for file names, e.g. 20261122-140311.
std::string file_timestamp_now();

}  // namespace tbench
