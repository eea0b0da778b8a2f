#pragma once
// timing.mllog: the run's events as MLPerf's logging library (mlperf_logging.mllog) writes them,
// one ":::MLLOG {json}" line per event, so the tools built for MLPerf training logs (their log
// parsers and result summarizers, anything that reads run_start to run_stop as the time to train)
// read tbench runs too. Streamed beside the result as events happen, like the iteration stream.
#include <chrono>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "tbench/results/result_files.hpp"
#include "tbench/train/train_run.hpp"

namespace tbench {

// MLPerf's three event types.
enum class MllogEvent { point_in_time, interval_start, interval_end };

// One log line, as mllog encodes it: ":::MLLOG {"namespace": "", "time_ms": ..., "event_type":
// ..., "key": ..., "value": ..., "metadata": {...}}" (keys in that order; time_ms in whole
// milliseconds since the Unix epoch), without the newline. The JSON is Python's json.dumps's,
// which mllog calls: ", " and ": " at every depth, objects in the order they were built, non-ASCII
// text as \uXXXX (bytes that are not UTF-8 as U+FFFD), and NaN and Infinity for those floats.
std::string mllog_line(int64_t time_ms, MllogEvent event, const std::string& key, const nlohmann::ordered_json& value,
                       const nlohmann::ordered_json& metadata);

// What a run's log states between init_start and init_stop, under MLPerf's keys where MLPerf
// has one (global_batch_size, opt_base_learning_rate, ...) and tbench_* ones for the rest.
struct MllogRunFacts {
  std::string model;  // submission_benchmark: not an MLPerf benchmark, the model trained
  int64_t seed = 0;
  int64_t global_batch_size = 0;  // samples per optimizer step over all processes
  int64_t gradient_accumulation_steps = 1;
  int64_t max_sequence_length = 0;
  double base_learning_rate = 0;
  double weight_decay = 0;
  double beta1 = 0, beta2 = 0, epsilon = 0;
  int64_t warmup_steps = 0;    // of the learning rate
  int64_t training_steps = 0;  // optimizer steps the run plans
  double gradient_clip_norm = 0;
  int64_t train_samples = 0, eval_samples = 0;
  std::string precision, device, task;
  int64_t world_size = 1;
  std::string result_path;  // the result the log belongs to
};

// The log file. Opening it writes init_start (at `init_started`: the device's set-up and the
// model's build began then), the facts, init_stop and run_start (now). Then each epoch is a
// block of one epoch (block_start, epoch_start; epoch_stop, its throughput and loss as
// tracked_stats, its evaluation as eval_start, eval_stop and eval_accuracy; block_stop);
// finish() writes run_stop once the result's status is final. Each line is written whole or not
// at all (WholeLineFile); a write that fails throws a run-failed Error naming the file (the
// trainer ends the run as failed). Every interval started is stopped: finish() stops the ones a
// stop, a failure or a failed write left open, and a log abandoned (an error escaped before the
// result was made: abandon() names it) or destroyed unfinished ends with run_stop "aborted".
class MllogStream : public TrainObserver {
 public:
  MllogStream(const std::string& path, std::chrono::system_clock::time_point init_started, const MllogRunFacts& facts);
  ~MllogStream() override;
  MllogStream(const MllogStream&) = delete;
  MllogStream& operator=(const MllogStream&) = delete;

  void on_epoch_start(int64_t epoch, int64_t epochs, int64_t steps_in_epoch) override;
  void on_iteration(const IterationRecord& record) override;
  void on_epoch_end(const EpochRecord& record) override;
  // The training ended (now): the intervals still open stop here, and so will the run.
  void end_training();
  // run_stop at the training's end (now, if end_training() was not called), with the result's
  // final status: "success" for a completed run, "aborted" for one interrupted or failed
  // (tbench_status says which, and tbench_error why); before it, the samples trained.
  void finish(RunStatus status, const std::string& error);
  // finish() as failed with `error`, unless it was called: for an error escaping before the
  // result was made. Never throws (the escaping error is the one to report).
  void abandon(const std::string& error) noexcept;

 private:
  void write(int64_t time_ms, MllogEvent event, const std::string& key, const nlohmann::ordered_json& value,
             const nlohmann::ordered_json& metadata = nlohmann::ordered_json::object());
  // epoch_stop with the samples trained so far and whether the epoch ran all its steps.
  void write_epoch_stop(int64_t time_ms, int64_t epoch, bool complete);
  // Stops what is still open, innermost first: an evaluation, an epoch (incomplete), a block.
  void stop_open_intervals(int64_t time_ms);

  WholeLineFile file_;
  int64_t world_size_ = 1;
  int64_t samples_ = 0;      // trained so far, by all processes: MLPerf's samples_count
  int64_t global_step_ = 0;  // the last step reported
  // Each interval's epoch from the line that started it to the line that stopped it (0: none), so
  // a write that fails between the two leaves finish() knowing what to stop.
  int64_t open_block_ = 0, open_epoch_ = 0, open_eval_ = 0;
  int64_t epoch_started_ms_ = 0;
  int64_t training_ended_ms_ = -1;  // set by end_training()
  bool finished_ = false;           // run_stop was written (or tried)
};

// Milliseconds since the Unix epoch, as mllog's time_ms.
int64_t unix_ms(std::chrono::system_clock::time_point at);

}  // namespace tbench
