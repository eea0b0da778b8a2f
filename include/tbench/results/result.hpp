#pragma once
// One run's result: everything the result JSON holds, as one value. It is assembled by the
// runner (src/run/runner.cpp), merged across data-parallel ranks here, and written by to_json, the
// one place that knows the file's layout (docs/schema/result.schema.json).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tbench/results/summary.hpp"
#include "tbench/train/train_run.hpp"

namespace tbench {

inline constexpr const char* kResultSchemaId = "tbench.result/1";

// The model as built: its shape, its size and its FLOPs per sample.
// A distillation run's teacher: run forward only, its FLOPs part of train_flops_per_sample.
struct TeacherInfo {
  std::string name, arch, precision;
  int64_t params = 0;
  double forward_flops_per_sample = 0;
  std::string weights;  // empty: random init
};

struct ModelInfo {
  std::string name, arch, source;
  std::string task = "classification";  // classification | mlm | distillation: the head and the loss
  int64_t hidden_size = 0, num_layers = 0, num_heads = 0, vocab_size = 0;
  int64_t params = 0;       // the model as built (classifier or masked LM; a student, not its teacher)
  int64_t base_params = 0;  // the pre-trained base, as HF counts it
  double train_flops_per_sample = 0;  // with a teacher: its forward included
  // Rank 0's mean training FLOPs per optimizer step in each of the first epochs it plans (one
  // where all epochs count alike; none with sparse prediction): what predict --epochs reads a line
  // in the steps' FLOPs at.
  std::vector<double> planned_epoch_step_train_flops;
  // Their mean (model.expected_step_train_flops): an epoch's expected work per step; none without.
  std::optional<double> expected_step_train_flops() const;
  std::string weights;  // the checkpoint it started from; empty: random init
  std::string initialised_from;  // distillation: "teacher" when the student took the teacher's layers
  std::optional<TeacherInfo> teacher;
};

// What one data-parallel rank measured, as it hands it to rank 0.
struct RankReport {
  int64_t rank = 0, local_rank = 0;
  std::string host, device;
  RunStatus status = RunStatus::completed;
  std::string error;
  int64_t steps = 0;
  Spread step_ms, comm_wait_ms;  // over its steady-state steps; step_ms.count: timed steps
  std::optional<double> comm_share, samples_per_s;
  // Its own rates over its steady steps: ranks' batches can differ in tokens and work. The FLOPs
  // only where every step counted its own.
  std::optional<double> tokens_per_s, real_tokens_per_s, train_flops_per_s;
  int64_t allreduces = 0;
};

// A rank's report from its own records (steady-state steps only).
RankReport make_rank_report(const RunRecords& records, const TrainOutcome& outcome);
nlohmann::json to_json(const RankReport& report);
// nullopt when `text` is not a report (a rank that died mid-write).
std::optional<RankReport> parse_rank_report(const std::string& text);

// A rank's failure, as it announced it to the others (Communicator::announce_failure).
struct RankFailure {
  int64_t rank = 0;
  std::string error;
  std::string describe() const { return "rank " + std::to_string(rank) + " failed: " + error; }
};

// The data-parallel run as a whole.
struct DistSection {
  int64_t world_size = 1;
  std::string backend, launcher, master;
  int64_t per_device_batch = 0, global_batch = 0;
  double bucket_mb = 0;
  int64_t buckets = 0, allreduces = 0;
  bool sync_every_micro_step = false;
  bool gradient_as_bucket_view = false;
  int64_t timeout_s = 0;
  std::vector<RankReport> ranks;  // rank 0 first
  std::vector<int64_t> missing_ranks;
  // The failure that broke the run: the first any rank announced (the others' errors follow from
  // it, or came later); none when no rank failed, or none could announce (a killed rank).
  std::optional<RankFailure> first_failure;
};

// Turns rank 0's per-device summary into the run's global one: rates times the world size
// (every rank ran the same steps in lockstep), per-device rates kept beside them, the
// communication share and the spread of the ranks' median step times. A peer that failed fails
// the run, its error appended.
void make_global(Summary& summary, const DistSection& dist);

struct ResultFiles {
  std::string result, iterations;
  std::string weights;  // empty: not saved
  std::string mllog;    // the MLPerf log (timing.mllog); empty: none
};

struct Result {
  std::string tbench_version, git_sha;
  nlohmann::json spec;  // the resolved spec, every default filled in
  nlohmann::json env;   // the machine, the libraries, the threads
  ModelInfo model;
  nlohmann::json data;  // the data section: source, sizes, lengths, tokenizer, cache
  RunRecords records;
  Summary summary;
  std::optional<DistSection> dist;
  std::optional<ProfileSummary> profile;  // timing.profile_steps
  ResultFiles files;
};

nlohmann::json to_json(const Result& result);
// The summary section alone, as to_json(Result) writes it.
nlohmann::json to_json(const Summary& summary);

}  // namespace tbench
