#include "tbench/results/mlperf_log.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "tbench/errors.hpp"

namespace tbench {

// Objects keep their insertion order, as Python's dicts do. (Not `json`: a unity build shares this
// namespace with files whose json is nlohmann::json.)
using LogJson = nlohmann::ordered_json;

namespace {

const char* event_type_text(MllogEvent event) {
  switch (event) {
    case MllogEvent::point_in_time: return "POINT_IN_TIME";
    case MllogEvent::interval_start: return "INTERVAL_START";
    case MllogEvent::interval_end: return "INTERVAL_END";
  }
  return "POINT_IN_TIME";
}

// The epoch's number as MLPerf's metadata names it, in an epoch's and a block's events.
LogJson epoch_metadata(int64_t epoch) { return {{"epoch_num", epoch}}; }
LogJson block_metadata(int64_t epoch) { return {{"first_epoch_num", epoch}, {"epoch_count", 1}}; }

int64_t ms_of(double seconds) { return static_cast<int64_t>(seconds * 1e3 + 0.5); }

int64_t now_ms() { return unix_ms(std::chrono::system_clock::now()); }

// A finite double as Python's repr (so json.dumps) writes it: the shortest digits that read back
// as the same double; positional from 1e-4 up to below 1e16, with ".0" on a whole number
// ("100.0", "1000000000000000.0"), and "d.ddde-05" / "1e+16" outside that. nlohmann's own dump
// turns to the exponent at 1e15 already.
std::string python_float(double x) {
  char buffer[64];
  const auto written = std::to_chars(buffer, buffer + sizeof buffer, x, std::chars_format::scientific);
  std::string text(buffer, written.ptr);  // shortest round trip: "-1.5e-05", "1e+16", "0e+00"
  const bool negative = text.front() == '-';
  if (negative) text.erase(0, 1);
  const std::size_t e = text.find('e');
  std::string digits = text.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exponent = std::atoi(text.c_str() + e + 1);
  const int point = exponent + 1;  // digits before the decimal point
  const int count = static_cast<int>(digits.size());
  std::string out;
  if (point > -4 && point <= 16) {
    if (point <= 0) {
      out = "0." + std::string(static_cast<std::size_t>(-point), '0') + digits;
    } else if (point >= count) {
      out = digits + std::string(static_cast<std::size_t>(point - count), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<std::size_t>(point)) + "." + digits.substr(static_cast<std::size_t>(point));
    }
  } else {
    const int magnitude = std::abs(exponent);
    out = digits.substr(0, 1) + (count > 1 ? "." + digits.substr(1) : "") + (exponent < 0 ? "e-" : "e+") +
          (magnitude < 10 ? "0" : "") + std::to_string(magnitude);
  }
  return negative ? "-" + out : out;
}

// A JSON value as Python's json.dumps writes it (mllog's encoder, default arguments).
std::string python_json(const LogJson& value) {
  switch (value.type()) {
    case LogJson::value_t::object: {
      std::string text = "{";
      for (auto item = value.begin(); item != value.end(); ++item) {
        if (item != value.begin()) text += ", ";
        text += python_json(item.key()) + ": " + python_json(item.value());
      }
      return text + "}";
    }
    case LogJson::value_t::array: {
      std::string text = "[";
      for (std::size_t i = 0; i < value.size(); ++i) text += (i ? ", " : "") + python_json(value[i]);
      return text + "]";
    }
    case LogJson::value_t::number_float: {
      const double number = value.get<double>();
      if (std::isnan(number)) return "NaN";
      if (std::isinf(number)) return number > 0 ? "Infinity" : "-Infinity";
      return python_float(number);
    }
    case LogJson::value_t::string:  // ensure_ascii, as json.dumps; a byte that is not UTF-8 becomes U+FFFD
      return value.dump(-1, ' ', /*ensure_ascii=*/true, LogJson::error_handler_t::replace);
    default: return value.dump();
  }
}

}  // namespace

int64_t unix_ms(std::chrono::system_clock::time_point at) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
}

std::string mllog_line(int64_t time_ms, MllogEvent event, const std::string& key, const LogJson& value,
                       const LogJson& metadata) {
  const LogJson line = {{"namespace", ""},        {"time_ms", time_ms}, {"event_type", event_type_text(event)},
                        {"key", key},              {"value", value},     {"metadata", metadata}};
  return ":::MLLOG " + python_json(line);
}

MllogStream::MllogStream(const std::string& path, std::chrono::system_clock::time_point init_started,
                         const MllogRunFacts& facts)
    : file_(path, "the MLPerf log (timing.mllog)"), world_size_(facts.world_size) {
  write(unix_ms(init_started), MllogEvent::interval_start, "init_start", nullptr);
  const int64_t now = now_ms();
  const auto fact = [&](const std::string& key, const LogJson& value) {
    write(now, MllogEvent::point_in_time, key, value);
  };
  fact("submission_benchmark", facts.model);
  fact("seed", facts.seed);
  fact("global_batch_size", facts.global_batch_size);
  fact("gradient_accumulation_steps", facts.gradient_accumulation_steps);
  fact("max_sequence_length", facts.max_sequence_length);
  fact("opt_name", "adamw");
  fact("opt_base_learning_rate", facts.base_learning_rate);
  fact("opt_adamw_weight_decay", facts.weight_decay);
  fact("opt_adamw_beta_1", facts.beta1);
  fact("opt_adamw_beta_2", facts.beta2);
  fact("opt_adamw_epsilon", facts.epsilon);
  fact("opt_learning_rate_warmup_steps", facts.warmup_steps);
  fact("opt_learning_rate_training_steps", facts.training_steps);
  fact("opt_gradient_clip_norm", facts.gradient_clip_norm);
  fact("train_samples", facts.train_samples);
  fact("eval_samples", facts.eval_samples);
  fact("tbench_task", facts.task);
  fact("tbench_precision", facts.precision);
  fact("tbench_device", facts.device);
  fact("tbench_world_size", facts.world_size);
  fact("tbench_result", facts.result_path);
  write(now, MllogEvent::interval_end, "init_stop", nullptr);
  write(now, MllogEvent::interval_start, "run_start", nullptr);
}

MllogStream::~MllogStream() {
  abandon("an error ended the run before its result was made (tbench's output says which)");
}

void MllogStream::abandon(const std::string& error) noexcept {
  if (finished_) return;
  try {  // the error on its way out is what the caller reports, not a failed last line
    finish(RunStatus::failed, error);
  } catch (...) {
  }
}

void MllogStream::on_epoch_start(int64_t epoch, int64_t, int64_t) {
  const int64_t now = now_ms();
  write(now, MllogEvent::interval_start, "block_start", nullptr, block_metadata(epoch));
  open_block_ = epoch;
  epoch_started_ms_ = now;
  write(now, MllogEvent::interval_start, "epoch_start", nullptr, epoch_metadata(epoch));
  open_epoch_ = epoch;
}

void MllogStream::on_iteration(const IterationRecord& record) {
  samples_ += record.samples * world_size_;  // the ranks step together, each on its own samples
  global_step_ = record.global_step;
}

// Called once the epoch's evaluation (if any) has run: the epoch ended eval_seconds before.
void MllogStream::on_epoch_end(const EpochRecord& record) {
  const int64_t now = now_ms();
  // Never before its start: the evaluation's milliseconds are rounded.
  const int64_t epoch_ended = std::max(epoch_started_ms_, now - ms_of(record.eval_seconds));
  write_epoch_stop(epoch_ended, record.epoch, record.complete);
  write(epoch_ended, MllogEvent::point_in_time, "tracked_stats",
        {{"throughput", record.samples_per_s * static_cast<double>(world_size_)}, {"train_loss", record.loss}},
        {{"epoch_num", record.epoch}, {"step", global_step_}, {"samples_count", samples_}});
  if (record.eval_samples > 0) {
    write(epoch_ended, MllogEvent::interval_start, "eval_start", nullptr, epoch_metadata(record.epoch));
    open_eval_ = record.epoch;
    write(now, MllogEvent::interval_end, "eval_stop", nullptr, epoch_metadata(record.epoch));
    open_eval_ = 0;
    // Nothing scored (no masked token among the held-out samples): no accuracy to log.
    if (record.eval_accuracy) {
      LogJson scored = epoch_metadata(record.epoch);
      scored["tbench_eval_loss"] = record.eval_loss ? LogJson(*record.eval_loss) : LogJson(nullptr);
      write(now, MllogEvent::point_in_time, "eval_accuracy", *record.eval_accuracy, scored);
    }
  }
  write(now, MllogEvent::interval_end, "block_stop", nullptr, block_metadata(record.epoch));
  open_block_ = 0;
}

void MllogStream::end_training() {
  training_ended_ms_ = now_ms();
  stop_open_intervals(training_ended_ms_);
}

void MllogStream::finish(RunStatus status, const std::string& error) {
  finished_ = true;  // tried once: a failure here is the caller's to report, not the destructor's
  const int64_t ended = training_ended_ms_ >= 0 ? training_ended_ms_ : now_ms();
  stop_open_intervals(ended);
  write(ended, MllogEvent::point_in_time, "trained_samples", samples_);
  LogJson stopped = {{"status", status == RunStatus::completed ? "success" : "aborted"},
                     {"tbench_status", to_string(status)}};
  if (!error.empty()) stopped["tbench_error"] = error;
  write(ended, MllogEvent::interval_end, "run_stop", nullptr, stopped);
}

// An epoch a stop or failure ended before its first step has no epoch record, and a write that
// failed may have left its interval's stop unwritten: each still ends, so every start has its stop.
void MllogStream::stop_open_intervals(int64_t time_ms) {
  if (open_eval_ > 0) {
    write(time_ms, MllogEvent::interval_end, "eval_stop", nullptr, epoch_metadata(open_eval_));
    open_eval_ = 0;
  }
  if (open_epoch_ > 0) write_epoch_stop(time_ms, open_epoch_, /*complete=*/false);
  if (open_block_ > 0) {
    write(time_ms, MllogEvent::interval_end, "block_stop", nullptr, block_metadata(open_block_));
    open_block_ = 0;
  }
}

void MllogStream::write_epoch_stop(int64_t time_ms, int64_t epoch, bool complete) {
  LogJson ended = epoch_metadata(epoch);
  ended["samples_count"] = samples_;
  ended["complete"] = complete;
  write(time_ms, MllogEvent::interval_end, "epoch_stop", nullptr, ended);
  open_epoch_ = 0;
}

void MllogStream::write(int64_t time_ms, MllogEvent event, const std::string& key, const LogJson& value,
                        const LogJson& metadata) {
  const std::string failure = file_.append(mllog_line(time_ms, event, key, value, metadata) + '\n');
  if (!failure.empty()) {
    throw Error(ExitCode::run_failed, file_.path() + ": cannot write the MLPerf log (" + key + "): " + failure);
  }
}

}  // namespace tbench
