#pragma once
// Reading result files and answering questions from them alone: report (tables and charts),
// compare (a throughput ratio with its confidence interval) and predict (more epochs, another GPU).
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tbench/env/hardware.hpp"
#include "tbench/errors.hpp"
#include "tbench/timing/stats.hpp"
#include "tbench/timing/steady_step.hpp"

namespace tbench {

// One iteration of a result, as analysis uses it.
struct ResultIteration {
  int64_t epoch = 0, samples = 0;
  int64_t tokens = 0;       // padded tokens this rank ran (0: an older result without them)
  int64_t real_tokens = 0;  // of them, the samples' own (0: an older result without them)
  double train_flops = 0;  // this rank's step FLOPs as the run counted them (0: an older result)
  double seconds = 0, ended_at = 0;
  bool warmup = false;
  bool profiled = false;  // timing.profile_steps: slowed by the profiler, kept out of step_seconds
};

// One result file, with the figures analysis needs pulled out of it and checked by load_result;
// analysis reads these, never `json` itself, so a malformed file fails once, at load, naming the field.
struct ResultFile {
  std::string path;
  nlohmann::json json;
  std::string model, task, name, host, device, gpu, precision, machine, status, peak_source;
  std::string rank0_device;  // a data-parallel result's dist.ranks[0].device: what rank 0 trained on
  double hidden_size = 768, num_layers = 12, num_heads = 12;  // for the memory estimate of predict
  bool stores_attention_scores = true;  // eager attention keeps [S, S] scores for backward; SDPA's kernels do not
  bool unpadded = false;                // model.unpad: the layers' per-token work ran at the real tokens alone
  bool tf32 = false;  // spec.cuda.tf32: fp32 matmuls ran on TF32 tensor cores, so TF32's peak applies
  bool cuda_graph = false;  // spec.train.cuda_graph as the run resolved it: its steps replayed a CUDA graph
  std::optional<double> peak_flops_per_s, peak_bytes_per_s;
  std::vector<double> peak_probes_flops_per_s;  // a CPU's, before and after the timed epochs
  std::optional<double> gpu_power_w_mean, gpu_energy_j_per_sample;  // summary: NVML's, CUDA runs only
  std::vector<ResultIteration> iterations;
  int64_t threads = 0, batch_size = 0, seq_len = 0, grad_accum = 1, steps_per_epoch = 0, params = 0;
  int64_t num_samples = 0;
  bool drop_last = true;  // spec.data.drop_last (absent: true, the default)
  int64_t world_size = 1;         // data-parallel processes (the result's dist section), else 1
  int64_t processes_on_host = 1;  // of those, the ones on rank 0's host, sharing its cores
  std::optional<double> comm_share;  // data-parallel: share of step time spent waiting for all-reduces
  // CUDA: the share of timed steps that began with the GPU idle (summary.device_idle_at_start_fraction):
  // near 1, the host set the steps' pace.
  std::optional<double> device_idle_at_start_fraction;
  // A CUDA run's kernel profile (timing.profile_steps, profile.bounds), per profiled step: the
  // device seconds of kernels bound by compute and by memory bandwidth (communication is left in
  // the rest of the step, which predict --target holds as measured). Scaled to the timed steps'
  // mean padded tokens where the profiled steps ran other lengths (dynamic padding).
  struct KernelSeconds {
    double compute = 0, memory = 0;
  };
  std::optional<KernelSeconds> kernel_seconds_per_step;
  // The same profile's kernels launched a profiled step (every bound's `calls`): what the host
  // launches to run one step eagerly. None where an entry does not count its calls.
  std::optional<double> kernel_launches_per_step;
  // The profile itself (timing.profile_steps), per profiled step: what it measures ("device
  // kernels", "host operators, self time"), the time of all its entries, and its `top` entries by
  // name. None where the run profiled nothing (or its profile lists no entries by name).
  struct StepProfile {
    std::string measures;
    double measured_ms_per_step = 0;
    std::vector<std::pair<std::string, double>> top_ms_per_step;
  };
  std::optional<StepProfile> step_profile;
  double train_flops_per_sample = 0;
  // model.planned_epoch_step_train_flops: rank 0's mean FLOPs per step in each epoch it planned
  // (older results: the one model.expected_step_train_flops, or none).
  std::vector<double> planned_epoch_step_train_flops;
  double epoch_seconds = 0;    // mean of complete epochs, else the projection from steady steps
  bool epoch_projected = false;
  // Samples that epoch trains over all ranks: the complete epochs' own count (a partial last step
  // under data.drop_last false trains fewer than a batch), else the projection's full steps.
  double epoch_samples = 0;
  std::vector<int64_t> epoch_samples_seen;  // each complete epoch's /epochs/N/samples (rank 0's)
  // The projection's 95% interval (summary.projected_epoch_seconds_ci95), where epoch_projected
  // and the run recorded one.
  std::optional<Interval> projected_epoch_ci95;
  double samples_per_s = 0;    // steady state (warm-up excluded); global for data-parallel results
  std::vector<double> step_seconds;  // timed (steady-state) steps
  std::vector<int64_t> step_samples; // samples of each timed step over all ranks
  std::vector<double> warmup_seconds;
  std::vector<double> epoch_wall_seconds;  // complete epochs, the profiler's start and stop left out
  bool profiled_a_complete_epoch = false;  // a complete epoch paid the profiler's start and stop
  std::vector<double> epoch_step_sum;      // sum of step seconds within each complete epoch
  // The epoch a run cut short (train.max_steps, a stop) after some steps: its wall time and its
  // steps' sum, as above. None where every epoch that ran completed.
  struct PartialEpoch {
    double wall_seconds = 0, step_sum = 0;
  };
  std::optional<PartialEpoch> partial_epoch;
  std::vector<double> epoch_eval_seconds;  // each epoch's evaluation after its steps, where it ran one
};

// load_result's refusal of a whole result whose every step was warm-up: nothing is wrong with the
// file; its run was too short to analyse, and would be again.
class TooShortToAnalyse : public Error {
 public:
  explicit TooShortToAnalyse(const std::string& message) : Error(ExitCode::bad_input, message) {}
};

// Loads and checks a result; errors name the file and what is wrong (exit 2).
ResultFile load_result(const std::string& path);
// With `left_out`, the files `report DIR/*.json` takes beside a folder's results (a sweep's state
// file, a profiled run's trace) and results too short to analyse (TooShortToAnalyse) are left out,
// each added there as a line that names the file and why; without, they are refused as any other
// file that is not a result.
std::vector<ResultFile> load_results(const std::vector<std::string>& paths, std::vector<std::string>* left_out = nullptr);

// A result's row in reports, scaling and predictions: the model, with " [mlm]" or
// " [distillation]" for the masked-LM tasks, so a model's tasks stay apart (their steps differ: a
// vocabulary-sized head, a teacher) unless the columns are the tasks themselves (by == "task").
std::string model_row(const ResultFile& r, const std::string& by = "");

// The processor a run's steps ran on: "cpu", or the GPU env names ("cuda" where it names none).
// Not spec.device's text: "cuda" and "cuda:0" are one GPU, and data-parallel ranks each take
// cuda:LOCAL_RANK whatever the spec's index says. The machine label is the host and this.
std::string processor_of(const ResultFile& r);

// The run among `runs` whose CPU peak probes (before and after its timed epochs) lie furthest
// apart, and their spread (probe_spread); none where no run has two probes. Over
// kPeakProbeSpreadWarning, the machine's speed moved during that run, and its rates carry it.
struct WidestProbeSpread {
  const ResultFile* run = nullptr;
  double spread = 0;
};
std::optional<WidestProbeSpread> widest_peak_probe_spread(const std::vector<const ResultFile*>& runs);

// The device a run's steps ran on, "cpu" or "cuda:N": rank 0's own record where a data-parallel
// result has one (it took cuda:LOCAL_RANK whatever the spec's index says); else spec.device, with
// "cuda" as cuda:0, and cuda:0 for a data-parallel rank 0 (local rank 0). Columns by device and
// setting differences read this, so "cuda" and "cuda:0" are one column.
std::string device_used(const ResultFile& r);

// The value at a dotted path ("spec.train.optimizer_impl") of a result's JSON, or nullptr where
// it has none.
const nlohmann::json* find_dotted(const nlohmann::json& root, const std::string& dotted);

// The column a result falls in: by "machine" (host, plus GPU), "host", "device", "precision",
// "threads", "batch_size", "seq_len", "world_size", "task" or "name"; or by any field of the
// resolved spec, dotted (e.g. "model.sparse_last_layer", "train.optimizer_impl"): "<last key>=<value>".
// A dotted field the result's spec does not record is an input error naming the file.
std::string label_of(const ResultFile& r, const std::string& by);

// A run's steady-state seconds per sample, step by step (the throughput's reciprocal), over its
// full steps: a partial step (an epoch's last, under data.drop_last false) pays a step's fixed
// cost for fewer samples, and is left out and counted. The timed full steps in order are taken as
// a series (SteadyStep): their lag-1 autocorrelation from kSerialStepsMin steps on, and what they
// are worth as independent ones.
struct PerSampleStepTimes {
  Spread seconds;
  std::optional<double> lag1_autocorrelation;
  double effective_steps = 0;
  int64_t partial_steps = 0;  // timed steps of fewer samples than the run's full step, left out
  std::optional<LogMean> log_mean() const { return tbench::log_mean(seconds, effective_steps); }
};
PerSampleStepTimes per_sample_step_times(const ResultFile& r);

// A run's steady step (SteadyStep) from its timed steps: a line in their FLOPs where `fit_flops`
// (the caller reads it at a planned work) and their work varied, else their mean.
SteadyStep run_steady_step(const ResultFile& r, bool fit_flops);

// The mean training FLOPs per step of a run of `epochs` epochs, from the epochs the source run
// planned (model.planned_epoch_step_train_flops): the first `epochs` of them, or all of them for a
// run longer than it planned. None where it planned none (older results, sparse prediction).
std::optional<double> planned_step_flops(const std::vector<double>& planned, int64_t epochs);

// ---- report ---------------------------------------------------------------------------------------
struct ReportCell {
  int runs = 0;
  double epoch_mean = 0, epoch_stdev = 0;  // seconds, over repeats
  bool projected = false;                  // epoch time projected from steady steps
  // A cell of one projected run: that projection's 95% interval, where the run recorded one
  // (repeats show their spread instead).
  std::optional<Interval> projected_ci95;
  double samples_per_s = 0;                // over repeats: all their samples over all their time
  double epoch_samples = 0;                // samples an epoch trained over all ranks, mean over repeats
  // Baseline epoch time / this epoch time, each per sample it trained: the two columns' epochs may
  // train different counts (more processes, another batch size: drop_last leaves another remainder).
  std::optional<double> speedup;
  // Its 95% interval: each side's epoch time known from its repeats where it has two or more (runs
  // are independent draws), else from its one run's steady step (run_steady_step, as its summary's
  // projected epoch; the run-to-run drift that repeats show is then unseen), which basis says:
  // "repeats", "steps", or "repeats and steps". None in the baseline column, or where a side has
  // fewer than two runs or steps to know it from.
  std::optional<Interval> speedup_ci95;
  std::string speedup_ci95_basis;
  // One GPU's mean power draw and energy per sample (NVML), over the repeats that measured them.
  std::optional<double> gpu_power_w, gpu_energy_j_per_sample;
  // CPU runs: the widest spread of one of its runs' peak probes (widest_peak_probe_spread), where
  // a run has two; over kPeakProbeSpreadWarning the machine's speed moved during that run.
  std::optional<double> peak_probe_spread;
  bool machine_speed_moved() const;
};

struct Report {
  std::string by, baseline;
  std::vector<std::string> models, labels;
  std::map<std::string, std::map<std::string, ReportCell>> cells;  // model -> label -> cell
  std::vector<const ResultFile*> results;
  // Cells that average runs which differ in more than their seeds (mixed_settings): one line each,
  // naming the cell and the fields, for the command to warn of.
  std::vector<std::string> mixed;
  // Speedups of a measured epoch (warm-up steps and the gaps between steps in it) against one
  // projected from steady steps alone (~), or of a cell that holds both: one line each, to warn of.
  std::vector<std::string> unlike_epochs;
  // Columns whose runs differ from the baseline column's in more than the column key and the
  // seeds (a speedup of two workloads, not of one setting): one line each, naming the fields.
  std::vector<std::string> unlike_columns;
  // Speedups of epochs that trained different sample counts (per trained sample): one line each.
  std::vector<std::string> unlike_samples;
  // Cells with a run whose CPU peak probes lay far apart (ReportCell::machine_speed_moved): one
  // line each, naming the run and its probes, for the command to warn of.
  std::vector<std::string> speed_moved;
};

Report build_report(const std::vector<ResultFile>& results, const std::string& by, const std::string& baseline);
// What the runs averaged into one report cell differ in, besides what repeats vary (the seeds)
// and the report's own column key (columns by host leave the machine out too, where the processors
// are alike): the fields of
// setting_differences. Empty when they are repeats of one setting.
std::vector<std::string> mixed_settings(const std::vector<const ResultFile*>& runs, const std::string& by);
// Repeats of one setting do the same work each: together they train at the harmonic mean of their
// rates, all their samples over all their time.
double rate_of_their_total_work(const std::vector<double>& rates);

// Whether runs measured whole epochs (warm-up steps and the gaps between steps in them), projected
// them from steady steps alone (~), or both.
struct EpochKinds {
  bool measured = false, projected = false;
};
EpochKinds epoch_kinds(const std::vector<const ResultFile*>& runs);
// A speedup of one against the other sets unlike epochs against each other: `report` and
// `report --scaling` warn of it, in kMeasuredAgainstProjected's words.
bool mixes_measured_and_projected(const EpochKinds& a, const EpochKinds& b);
inline constexpr const char* kMeasuredAgainstProjected =
    "sets epochs measured whole (warm-up included) against epochs projected from steady steps (~); run both to a "
    "whole epoch, or both with train.max_steps";

std::string render_report(const Report& report, const std::string& format);  // table|markdown|csv|json|html
nlohmann::json report_json(const Report& report);

// ---- report --scaling ------------------------------------------------------------------------------
// Data-parallel scaling against the single-process run of the same spec (model, device kind,
// precision, per-device batch, seq_len, threads, samples per epoch): speedup T1/TN of the epoch
// time and efficiency (T1/TN)/N. Efficiency above 1.05 is flagged super-linear, below 0.5 collapsing.
struct ScalingRow {
  std::string model, config;  // config: with "N threads/process" on CPU (threads set no GPU's pace)
  int64_t world_size = 1;
  int runs = 0;
  double epoch_seconds = 0;  // mean over repeats
  EpochKinds epochs;          // its runs' epochs: measured whole, projected (~), or both
  // Samples an epoch trained on, over all processes: with drop_last an N-process epoch can train
  // on fewer than the 1-process one, so speedup compares epoch time per trained sample.
  double epoch_samples = 0;
  double samples_per_s = 0;  // global, over repeats: all their samples over all their time
  std::optional<double> comm_share, speedup, efficiency;
  // "", "super-linear", "collapsing", "no 1-process baseline", or "no eager 1-process baseline" where
  // the only one replayed a CUDA graph (data-parallel steps never do: the two steps differ).
  std::string flag;
  // CPU: where no 1-process run had the same threads per process, the baseline is one that used
  // the same cores (threads x processes on the host, as `threads: 0` resolves); this names it.
  std::string baseline;
};
// With `warnings`, a line for each row that averages runs differing in more than their seeds
// (mixed_settings), and each speedup of a measured epoch against a projected one (~).
std::vector<ScalingRow> build_scaling(const std::vector<ResultFile>& results,
                                      std::vector<std::string>* warnings = nullptr);
std::string render_scaling(const std::vector<ScalingRow>& rows, const std::string& format);  // table|markdown|csv|json

// ---- report --profile -----------------------------------------------------------------------------
// One result's profiled step by kind of work: its profile's `top` entries sorted again with
// op_category (so older results read as new ones), and the time past them as a kind of its own.
struct ProfileColumn {
  std::string label, path, measures;
  double ms_per_step = 0;                // the profile's whole time a profiled step
  double median_step_ms = 0;             // the timed steps' median, beside it
  std::map<std::string, double> kinds;   // kind of work -> ms a profiled step
};
// A column per result, labelled as `report --by` labels it; a result without a profile is an
// input error naming the file.
std::vector<ProfileColumn> build_profile_report(const std::vector<ResultFile>& results, const std::string& by);
std::string render_profile_report(const std::vector<ProfileColumn>& columns, const std::string& format);  // table|markdown|csv|json

// ---- compare --------------------------------------------------------------------------------------
// A setting two results record differently: a dotted field and each side's value (null where a
// result does not record it, and where it records null).
struct SettingDifference {
  std::string field;
  nlohmann::json a, b;
  bool a_recorded = true, b_recorded = true;  // false: that result has no such field (an older tbench)
};

// One side of a comparison: its runs (one, or repeats of one setting), their throughput, and what
// its mean per-sample step time is known from.
struct ComparedSide {
  int64_t runs = 0;
  int64_t steps = 0;          // timed full steps, over its runs
  int64_t partial_steps = 0;  // timed partial steps left out (PerSampleStepTimes), over its runs
  double samples_per_s = 0;   // 1 / the runs' mean per-sample step time
  // "repeats" (two runs or more: the spread of the runs' means, each run an independent draw, so
  // run-to-run drift counts) or "steps" (one run: its timed steps as a series, which cannot see how
  // the next run of the same spec will differ).
  std::string basis;
  // One run: its steps' lag-1 autocorrelation (none under kSerialStepsMin steps) and what they are
  // worth as independent ones. Repeats: the runs' means' coefficient of variation, in percent.
  std::optional<double> lag1_autocorrelation, effective_steps, runs_cv_pct;
  // CPU runs: the largest spread of one run's peak probes (fastest over slowest − 1), and that
  // run's probes. Over kPeakProbeSpreadWarning, the machine's speed moved during it.
  std::optional<double> peak_probe_spread;
  std::vector<double> peak_probes_flops_per_s;
};

struct Comparison {
  ComparedSide a, b;
  double ratio = 0;                    // B's throughput over A's
  std::optional<Interval> ci95;        // its 95% confidence interval; none where a side knows nothing
  std::string no_interval;             // why there is none
  bool significant = false;            // the interval excludes 1
  std::vector<SettingDifference> differences;  // what else tells A's first run and B's apart
};

// The ratio of A's mean per-sample step time to B's (warm-up excluded), each side's the mean of
// its runs'. Its interval: the delta method on the log ratio with Welch's degrees of freedom, each
// side's mean known from its runs' spread where it has two or more, else from its one run's steps
// counted as their effective number (a drifting machine's neighbouring steps are alike, and know
// their mean less well than as many independent ones). None where a side has one run of one
// timed step, or where every step on both sides took the same time. Neither side may be empty.
Comparison compare_results(const std::vector<const ResultFile*>& a, const std::vector<const ResultFile*>& b);
Comparison compare_results(const ResultFile& a, const ResultFile& b);  // one run a side

// Every field of the two resolved specs that differs (not the run's name, output path or sweep
// bookkeeping), then the tbench commit, the torch version and the BLAS libraries, the machine
// (host and device) and the data-parallel world size (the launcher's, in no spec field): what a
// ratio measures, and what else moved with it.
std::vector<SettingDifference> setting_differences(const ResultFile& a, const ResultFile& b);
// A side's value as compare and report print it: JSON (a recorded null too), or "(not recorded)"
// for a field the result lacks (its tbench had no such field).
std::string setting_value_text(const nlohmann::json& value, bool recorded);
// Repeats are separate runs: a file given twice, or a copy of one, would narrow an interval for
// nothing. Throws a bad-input Error naming both, prefixed by `command`.
void refuse_copies_of_one_run(const std::vector<const ResultFile*>& runs, const std::string& command);

// ---- predict --------------------------------------------------------------------------------------
struct EpochPrediction {
  int64_t epochs = 0;
  double predicted_seconds = 0;   // training: warm-up overhead once + N steady epochs
  // From a run cut short before its first epoch ended (train.max_steps): the time outside the
  // steps is that partial epoch's, and there is no naive figure.
  bool from_partial_epoch = false;
  // Each epoch's evaluation (the measured epochs' mean), where the run evaluated: the N epochs'
  // training and evaluation together.
  std::optional<double> eval_seconds_per_epoch, predicted_with_eval_seconds;
  // How the steady step was had: "mean" (the timed steps' mean; "mean, scaled to the planned work"
  // where the planned steps' FLOPs differ from the timed ones' mean), or "flops line" (a line in the
  // steps' FLOPs fitted over the timed steps, read at the N epochs' planned mean FLOPs per step,
  // where the steps' work varied: dynamic padding); steady_step_seconds is that step.
  std::string step_model = "mean";
  double steady_step_seconds = 0;
  std::optional<double> step_train_flops;  // the N epochs' planned mean FLOPs per step, where known
  // The steady step's deviations in step order (SteadyStep): their lag-1 autocorrelation (none
  // under 10 timed steps) and what the timed steps are worth as independent ones.
  std::optional<double> step_lag1_autocorrelation;
  double effective_steps = 0;
  // Its 95% confidence interval from the steady step's (the timed steps as a series: worth
  // effective_steps independent ones), never below 0; none with fewer than two timed steps (three
  // for a line). With `actual`, whether it holds the actual time.
  std::optional<Interval> predicted_seconds_ci95;
  std::optional<bool> actual_within_ci95;
  std::optional<double> naive_seconds;  // N x the first complete epoch; none without one
  double steady_epoch_seconds = 0;
  double warmup_overhead_seconds = 0;
  std::optional<double> actual_seconds, error_pct, naive_error_pct;
  // Where both evaluated every epoch: the actual's training and evaluation, and the error of
  // predicted_with_eval_seconds against it.
  std::optional<double> actual_with_eval_seconds, with_eval_error_pct;
};
EpochPrediction predict_epochs(const ResultFile& r, int64_t epochs, const ResultFile* actual);

// A step's time in the parts that scale differently from one GPU to another: kernels bound by
// compute (by peak FLOPs), kernels bound by memory (by bandwidth), and the rest of the step,
// held as measured: the device idle while the host launches kernels, and communication.
struct StepParts {
  double compute = 0, memory = 0, held = 0;
  double total() const { return compute + memory + held; }
};

// A step whose GPU sat idle for this share of it or more, waiting for the host to launch its
// kernels, is held by the host: its host, not its GPU, set its pace.
constexpr double kHostHeldShare = 0.2;

// That share, from a CUDA run's kernel profile: the mean step less its kernels and its
// communication (comm_share), over the step. None without a kernel profile.
std::optional<double> host_held_share(const ResultFile& r);

// How fast a machine's host launches a training step's kernels: the mean step over the kernels a
// step launched, on eager single-process runs whose GPU waited for their host (held by it, so the
// step lasted about as long as its launching), the median over the runs. To first order any model
// and precision will do: a launch's cost is the host's and the software's more than the work's.
// It is an upper bound (the step's fixed host work and the GPU's busy stretches count as
// launching), and noisy: runs on one host ranged over about +-13 % (the H200 machine's six, 14 to
// 19 us, bench/results/gpu/NVIDIA-H100-80GB-HBM3/cross-gpu.md), so several runs are better than
// one. Refuses (exit 2), by file, a run that cannot time it: on the CPU, a CUDA graph,
// data-parallel, without a kernel profile that counts its launches, or with a GPU the host did
// not hold.
struct HostPace {
  std::vector<std::string> from;  // the results it was measured on
  std::vector<double> by_run;     // each one's seconds a launch, in `from`'s order
  double seconds_per_launch = 0;  // their median
};
HostPace measure_host_pace(const std::vector<const ResultFile*>& runs);

struct TargetPrediction {
  std::string source_device, target_device, precision;
  // "kernel profile" where the source has one (profile.bounds) and both bandwidths are known,
  // else "roofline" (the step's FLOPs and estimated bytes, one efficiency calibrated on the source).
  std::string method;
  // The source's timed steps' mean FLOPs, as the run counted them step by step (dynamic padding,
  // model.unpad and sparse prediction change them per batch); a result without them,
  // model.train_flops_per_sample for every sample.
  double flops_per_step = 0, bytes_per_step = 0;
  double source_step_seconds = 0, source_peak_flops = 0, source_efficiency = 0;
  double predicted_step_seconds = 0, naive_step_seconds = 0, roofline_step_seconds = 0;
  double predicted_epoch_seconds = 0, naive_epoch_seconds = 0;
  std::optional<StepParts> source_parts, target_parts;  // kernel profile: the measured step, and its prediction
  // Kernel profile, the other hypothesis for a step the host's launching bounds: the host keeps its
  // time and the target's kernels fill the device's idle gaps first, so the step is the larger of
  // the measured step and the target's kernel time (compute + memory). The additive prediction
  // keeps the idle time beside slower kernels instead. Real runs on both GPUs decide between them.
  std::optional<double> overlapped_step_seconds;
  // With the target machine's host pace (predict --target-host): the time that host takes to launch
  // the kernels the source's step launched, and the target GPU's own time for the step (its
  // kernels, the source's all-reduce waits, and the gaps between its kernels where the GPU bound
  // the source's step). An eager step lasts as long as the slower of the two, so that larger one
  // is the prediction ("kernel profile + target host"); target_parts stay the additive one's.
  std::optional<HostPace> target_host;
  std::optional<double> launches_per_step, target_host_step_seconds, target_device_step_seconds;
  // The source's own host pace, where its GPU waited for that host (host_held_share): beside the
  // target's, how much faster or slower the target's host launches.
  std::optional<double> source_seconds_per_launch;
  // compute or memory; kernel profile also "host" (the held part is the target's largest)
  std::string bound;
  std::optional<double> actual_epoch_seconds, error_pct, naive_error_pct, roofline_error_pct, overlapped_error_pct;
  // With the target's host: the error of the kernel profile's own prediction (the source's host kept).
  std::optional<double> additive_error_pct;
};
TargetPrediction predict_target(const ResultFile& r, const DeviceSpec& target, const ResultFile* actual,
                                const HostPace* target_host = nullptr);

// Bytes one training step moves through memory (weights, gradients, AdamW state, activations):
// an estimate for the roofline's memory side, its activations at the padded tokens the timed
// steps computed (seq_len's for a result without them).
double estimate_bytes_per_step(const ResultFile& r);

}  // namespace tbench
