#pragma once
// A result on disk: where its files go, the JSONL stream written as steps finish, and the
// refusal to overwrite a result unless asked.
#include <string>

#include "tbench/files.hpp"
#include "tbench/train/train_run.hpp"

namespace tbench {

// results/x.json -> results/x.iterations.jsonl
std::string iterations_path_for(const std::string& result_path);
// The profiler's Chrome/Perfetto trace beside it: run.json -> run.trace.json (timing.profile_steps).
std::string trace_path_for(const std::string& result_path);
// The MLPerf-style log beside it: run.json -> run.mllog (timing.mllog).
std::string mllog_path_for(const std::string& result_path);

// The files a run writes beside its result, besides the iteration stream.
struct ResultSideFiles {
  bool trace = false;  // timing.profile_steps
  bool mllog = false;  // timing.mllog
};

// Refuses (exit 3) to overwrite an existing result or stream (and the side files the run writes:
// the profiler's trace, the MLPerf log) unless `force`.
void ensure_writable(const std::string& result_path, bool force, ResultSideFiles side = {});

// A file written a whole line at a time, one write() per line, from empty: a line that cannot be
// written whole (a full disk, a file-size limit) is cut off again, so the file holds only whole
// lines whatever happens.
class WholeLineFile {
 public:
  // Throws a bad-input Error naming `path` and `what` the file is where it cannot be opened.
  WholeLineFile(const std::string& path, const std::string& what);
  ~WholeLineFile();
  WholeLineFile(const WholeLineFile&) = delete;
  WholeLineFile& operator=(const WholeLineFile&) = delete;
  // Appends `line` (its newline included); empty, or why it could not.
  std::string append(const std::string& line);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  long long whole_bytes_ = 0;  // the file's length after the last whole line
};

// Appends each iteration record to a JSONL file as soon as it is made, one write() per line, so
// a crash or kill loses at most the step in flight and never leaves half a line. A write that
// fails (a full disk, a file-size limit) is cut back to the last whole line and throws a
// run-failed Error naming the file and the reason; the trainer ends the run as failed.
class IterationStream : public TrainObserver {
 public:
  explicit IterationStream(const std::string& path);
  void on_iteration(const IterationRecord& record) override;

 private:
  WholeLineFile file_;
};

// Local time as ISO 8601 with offset, e.g. 2026-11-22T14:03:11+01:00.
std::string iso8601_now();
// Compact timestamp for file names, e.g. 20261122-140311.
std::string file_timestamp_now();

}  // namespace tbench
