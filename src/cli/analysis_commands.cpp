// report, compare, predict: questions answered from result files alone.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "tbench/analysis/analysis.hpp"
#include "tbench/cli/commands.hpp"
#include "tbench/errors.hpp"
#include "tbench/files.hpp"
#include "tbench/results/result_files.hpp"
#include "tbench/results/summary.hpp"
#include "tbench/timing/stats.hpp"
#include "tbench/json_text.hpp"
#include "tbench/text.hpp"

namespace tbench {
namespace {

using nlohmann::json;

struct AnalysisOptions {
  std::vector<std::string> results;
  std::string by = "machine", baseline, format = "table", output;
  std::vector<std::string> vs;  // compare: B's runs
  std::string result, target, actual;
  std::vector<std::string> target_host;  // predict: runs on the target machine, for its host's pace
  int64_t epochs = 0;
  bool as_json = false;
  bool scaling = false;
  bool profile = false;
};

AnalysisOptions g_analysis;

void emit(const std::string& text, const std::string& output) {
  if (output.empty()) {
    std::cout << text;
  } else {
    write_command_output("-o", output, text);
    std::cerr << "wrote " << output << "\n";
  }
}

// A run that stopped early measured its steps all the same, but its epoch figures are projected
// from them, and an interrupted or failed run may have stopped for what slowed it: say so.
void warn_of_unfinished_run(const char* command, const ResultFile& r) {
  if (r.status == "completed") return;
  std::fprintf(stderr, "%s: warning: %s: the run %s after %zu timed steps; its figures stand on those\n", command,
               r.path.c_str(), r.status == "failed" ? "failed" : "was interrupted", r.step_seconds.size());
}

std::vector<ResultFile> load_results_for(const char* command, const std::vector<std::string>& paths,
                                         std::vector<std::string>* left_out = nullptr) {
  std::vector<ResultFile> results = load_results(paths, left_out);
  for (const auto& r : results) warn_of_unfinished_run(command, r);
  return results;
}

ResultFile load_result_for(const char* command, const std::string& path) {
  ResultFile r = load_result(path);
  warn_of_unfinished_run(command, r);
  return r;
}

std::string signed_pct(double value) { return (value >= 0 ? "+" : "") + format_fixed(value, 1) + "%"; }

// `report DIR/*.json` on a sweep's folder takes its state file too, and profiled runs' traces; a
// folder may hold a run that stopped in its warm-up: left out, with a note.
std::vector<ResultFile> load_results_for_report(const std::vector<std::string>& paths) {
  std::vector<std::string> left_out;
  std::vector<ResultFile> results = load_results_for("report", paths, &left_out);
  for (const auto& line : left_out) std::fprintf(stderr, "report: note: %s: left out\n", line.c_str());
  if (results.empty()) {
    throw input_error("report: no results among the files given (only sweeps' state files, traces and runs too "
                      "short to analyse)");
  }
  return results;
}

int report_command() {
  const auto results = load_results_for_report(g_analysis.results);
  if (!g_analysis.output.empty()) check_command_output("-o", g_analysis.output, g_analysis.results);
  if (g_analysis.scaling) {
    std::vector<std::string> warnings;
    const auto rows = build_scaling(results, &warnings);
    for (const auto& line : warnings) std::fprintf(stderr, "report --scaling: warning: %s\n", line.c_str());
    emit(render_scaling(rows, g_analysis.format), g_analysis.output);
    return 0;
  }
  if (g_analysis.profile) {
    emit(render_profile_report(build_profile_report(results, g_analysis.by), g_analysis.format), g_analysis.output);
    return 0;
  }
  const Report report = build_report(results, g_analysis.by, g_analysis.baseline);
  // A cell that averages unlike runs is a number to doubt: say so, beside the output.
  for (const auto& line : report.mixed) std::fprintf(stderr, "report: warning: cell %s\n", line.c_str());
  for (const auto& line : report.unlike_epochs) std::fprintf(stderr, "report: warning: %s\n", line.c_str());
  for (const auto& line : report.unlike_columns) std::fprintf(stderr, "report: warning: %s\n", line.c_str());
  for (const auto& line : report.unlike_samples) std::fprintf(stderr, "report: note: %s\n", line.c_str());
  for (const auto& line : report.speed_moved) std::fprintf(stderr, "report: warning: cell %s\n", line.c_str());
  emit(render_report(report, g_analysis.format), g_analysis.output);
  return 0;
}

std::string describe(const ResultFile& r) {
  const std::string processes =
      r.world_size > 1 ? " x " + std::to_string(r.world_size) + " processes (data-parallel)" : std::string();
  return r.model + " on " + r.machine + ", " + r.device + ", " + r.precision + ", " + std::to_string(r.threads) +
         " thread(s), batch " + std::to_string(r.batch_size * r.grad_accum) + processes + ", seq " +
         std::to_string(r.seq_len);
}

// The share of a side's steps that began with the GPU idle: its runs' mean, over those that record it.
std::optional<double> mean_device_idle_at_start(const std::vector<ResultFile>& runs) {
  double sum = 0;
  int counted = 0;
  for (const auto& r : runs) {
    if (!r.device_idle_at_start_fraction) continue;
    sum += *r.device_idle_at_start_fraction;
    ++counted;
  }
  return counted > 0 ? std::optional<double>(sum / counted) : std::nullopt;
}

// A CPU run whose peak probes before and after its epochs lie far apart ran on a machine whose
// speed moved meanwhile: its throughput carries that, beside the setting's effect.
void print_machine_speed_moved(std::size_t runs, const ComparedSide& side) {
  if (!side.peak_probe_spread || *side.peak_probe_spread <= kPeakProbeSpreadWarning) return;
  std::printf("   the machine's speed moved during %s: its CPU peak probes before and after the epochs gave %s "
              "GFLOP/s, %.0f%% apart\n",
              runs > 1 ? "one of its runs" : "the run", probes_gflops_text(side.peak_probes_flops_per_s).c_str(),
              100 * *side.peak_probe_spread);
}

// Its summary's samples/s counts them, so the two figures differ: say why.
void print_partial_steps_left_out(const ComparedSide& side) {
  if (side.partial_steps == 0) return;
  std::printf("   %lld partial step(s) left out (an epoch's last under data.drop_last false: a step's fixed cost "
              "for fewer samples)\n",
              static_cast<long long>(side.partial_steps));
}

// One side of a comparison: its runs, its throughput, and what the interval knows of it: one run's
// steps (what they were worth as independent ones, where neighbouring steps were alike) or the
// repeats' spread.
void print_compared_side(const char* name, const std::vector<ResultFile>& runs, const ComparedSide& side) {
  std::printf("%s: %s", name, runs.front().path.c_str());
  if (runs.size() > 1) std::printf(" and %zu more run(s) of it", runs.size() - 1);
  std::printf("\n   %s\n", describe(runs.front()).c_str());
  // A host-paced side differs from the other by how fast its host launched, not by its GPU's work.
  if (const auto idle = mean_device_idle_at_start(runs); is_host_paced(idle)) {
    std::printf("   host-paced: the GPU had run all queued work before %.0f%% of its steps began\n", 100 * *idle);
  }
  print_machine_speed_moved(runs.size(), side);
  std::printf("   %.2f samples/s", side.samples_per_s);
  if (side.runs_cv_pct) {
    std::printf(", the mean of %lld runs (their spread %.1f%%) over %lld steady steps\n",
                static_cast<long long>(side.runs), *side.runs_cv_pct, static_cast<long long>(side.steps));
    print_partial_steps_left_out(side);
    return;
  }
  std::printf(" over %lld steady steps", static_cast<long long>(side.steps));
  if (side.lag1_autocorrelation && side.effective_steps &&
      *side.effective_steps < static_cast<double>(side.steps)) {
    std::printf(" (worth %.1f independent ones: lag-1 autocorrelation %.2f)", *side.effective_steps,
                *side.lag1_autocorrelation);
  }
  std::printf("\n");
  print_partial_steps_left_out(side);
}

json compared_side_json(const std::string& name, const std::vector<ResultFile>& runs, const ComparedSide& side) {
  json files = json::array();
  for (const auto& r : runs) files.push_back(r.path);
  return {{name, runs.front().path},
          {name + "_files", files},
          {name + "_runs", side.runs},
          {name + "_basis", side.basis},
          {name + "_samples_per_s", side.samples_per_s},
          {name + "_steps", side.steps},
          {name + "_partial_steps_left_out", side.partial_steps},
          {name + "_effective_steps", or_null(side.effective_steps)},
          {name + "_step_lag1_autocorrelation", or_null(side.lag1_autocorrelation)},
          {name + "_runs_cv_pct", or_null(side.runs_cv_pct)},
          {name + "_peak_probe_spread", or_null(side.peak_probe_spread)},
          {name + "_device_idle_at_start_fraction", or_null(mean_device_idle_at_start(runs))}};
}

// What of two runs' work differs: the network as built (its name and training FLOPs per sample:
// one config given by name on one run and by file on another is the same), the task, the length.
std::vector<std::string> work_differences(const ResultFile& a, const ResultFile& b) {
  std::vector<std::string> fields;
  if (a.model != b.model) fields.push_back("model");
  if (a.train_flops_per_sample != b.train_flops_per_sample) fields.push_back("model.train_flops_per_sample");
  if (a.task != b.task) fields.push_back("task");
  if (a.seq_len != b.seq_len) fields.push_back("data.seq_len");
  return fields;
}

// Repeats on a side should be runs of one setting: say where they are not. Where they train
// different work (another model, task or length), their samples/s are not one quantity measured
// again, and their mean is no side's speed: refused.
void check_repeats_of_one_setting(const char* name, const std::vector<const ResultFile*>& runs) {
  std::vector<std::string> work;
  for (std::size_t i = 1; i < runs.size() && work.empty(); ++i) work = work_differences(*runs.front(), *runs[i]);
  if (!work.empty()) {
    throw input_error("compare: " + std::string(name) + "'s " + std::to_string(runs.size()) +
                      " runs train different work (they differ in " + join(work) +
                      "): a side's runs are repeats of one setting; compare those settings as A and B");
  }
  const auto mixed = mixed_settings(runs, "");
  if (mixed.empty()) return;
  std::fprintf(stderr, "compare: warning: %s's %zu runs differ in %s\n", name, runs.size(), join(mixed).c_str());
}

// A file given twice, or a copy of it under another name, is one run counted twice: a side of
// copies has no spread, and would make any difference "significant".
int compare_command() {
  // `compare A B`, or each side's repeats: `compare A1 A2 ... --vs B1 B2 ...`.
  std::vector<std::string> a_files = g_analysis.results, b_files = g_analysis.vs;
  if (b_files.empty()) {
    if (a_files.size() != 2) {
      throw input_error("compare: give two results (A B), or A's runs, then --vs and B's runs; got " +
                        std::to_string(a_files.size()) + " result(s) and no --vs");
    }
    b_files = {a_files.back()};
    a_files.pop_back();
  }
  const std::vector<ResultFile> a = load_results_for("compare", a_files), b = load_results_for("compare", b_files);
  std::vector<const ResultFile*> pa, pb;
  for (const auto& r : a) pa.push_back(&r);
  for (const auto& r : b) pb.push_back(&r);
  // A run against itself (or a copy of it) would score 1.000x "no significant difference".
  std::vector<const ResultFile*> all = pa;
  all.insert(all.end(), pb.begin(), pb.end());
  refuse_copies_of_one_run(all, "compare");
  check_repeats_of_one_setting("A", pa);
  check_repeats_of_one_setting("B", pb);
  const Comparison c = compare_results(pa, pb);
  if (g_analysis.as_json) {
    json differences = json::array();
    for (const auto& d : c.differences) {
      json difference = {{"field", d.field}, {"a", d.a}, {"b", d.b}};
      // Only where a side lacks the field (an older result), so the usual shape stays as it was.
      if (!d.a_recorded) difference["a_recorded"] = false;
      if (!d.b_recorded) difference["b_recorded"] = false;
      differences.push_back(std::move(difference));
    }
    json out = compared_side_json("a", a, c.a);
    out.update(compared_side_json("b", b, c.b));
    out.update({{"ratio", c.ratio},
                {"ci95", c.ci95 ? json::array({c.ci95->low, c.ci95->high}) : json(nullptr)},
                {"no_interval", c.ci95 ? json(nullptr) : json(c.no_interval)},
                {"significant", c.significant},
                {"differences", differences}});
    std::cout << json_text(out, 2) << "\n";
    return 0;
  }
  print_compared_side("A", a, c.a);
  print_compared_side("B", b, c.b);
  if (c.ci95) {
    std::printf("B/A throughput: %.3fx  (95%% CI %.3f .. %.3f)  %s\n", c.ratio, c.ci95->low, c.ci95->high,
                c.significant ? (c.ratio > 1 ? "B is significantly faster" : "B is significantly slower")
                              : "no significant difference");
  } else {
    std::printf("B/A throughput: %.3fx  (no interval: %s)\n", c.ratio, c.no_interval.c_str());
  }
  if (c.a.basis == "steps" || c.b.basis == "steps") {
    std::printf("  (a side of one run knows its own steps, not how the next run of it will differ: for an\n"
                "   interval that does, repeat the runs and give them: compare A1 A2 ... --vs B1 B2 ...)\n");
  }
  if (c.differences.empty()) {
    std::printf("Settings: the same spec, tbench commit, torch, BLAS, machine and world size\n");
  } else {
    std::printf("Settings that differ (A -> B):\n");
    for (const auto& d : c.differences) {
      std::printf("  %s: %s -> %s\n", d.field.c_str(), setting_value_text(d.a, d.a_recorded).c_str(),
                  setting_value_text(d.b, d.b_recorded).c_str());
    }
  }
  return 0;
}

// A step the GPU sat idle through, waiting for the host to launch its kernels, keeps that time on
// any GPU: the target's host sets it, and no datasheet describes the host. Scored on an H200 and an
// H100 (bench/results/gpu/NVIDIA-H100-80GB-HBM3/cross-gpu.md), such rows missed by 24-62%, the
// rows the GPU bounds by 1-5%. The kernel profile says how much of the step was held; without
// one, the steps' own record says whether most of them began with the GPU idle.
void warn_of_a_host_held_step(const ResultFile& r, const TargetPrediction& p) {
  if (p.target_host) return;  // the target's own host paced it
  std::string held;
  if (p.source_parts) {
    // The held part also holds a data-parallel step's wait for its all-reduces: not the host's.
    const double host = host_held_share(r).value_or(0.0);
    if (host < kHostHeldShare) return;
    held = "the GPU sat idle for " + format_fixed(100 * host, 0) + "% of the measured step, waiting for the host";
  } else if (is_host_paced(r.device_idle_at_start_fraction)) {
    held = "the GPU had run all queued work before " + format_fixed(100 * *r.device_idle_at_start_fraction, 0) +
           "% of the steps began, waiting for the host";
  } else {
    return;
  }
  std::printf("  %s: on the target that\n  part is its host's, which the prediction takes to be as fast as this one%s\n",
              held.c_str(),
              r.cuda_graph ? ""
                           : "\n  (--target-host RUN takes the target host's pace from a run on it; train.cuda_graph "
                             "takes the host out of the step)");
}

// The actual (or a run timing the target's host) should have run on the target: a known GPU that
// is not it scores the prediction against the wrong machine (a spec file may name its GPU freely,
// so this warns, not refuses).
void warn_of_another_gpu(const ResultFile& run, const DeviceSpec& target) {
  const std::optional<DeviceSpec> ran_on = find_gpu(run.gpu);
  if (!ran_on || ran_on->name == target.name) return;
  std::fprintf(stderr, "predict: warning: %s ran on %s (%s), not on the target %s\n", run.path.c_str(),
               run.gpu.c_str(), ran_on->name.c_str(), target.name.c_str());
}

// A launch's cost is the host's and the software's: a run on another torch times another dispatcher.
void warn_of_other_software(const ResultFile& source, const ResultFile& run) {
  const nlohmann::json* ours = find_dotted(source.json, "env.torch");
  const nlohmann::json* theirs = find_dotted(run.json, "env.torch");
  if (!ours || !theirs || *ours == *theirs) return;
  std::fprintf(stderr, "predict: warning: %s ran on torch %s, %s on %s: the host's pace of launches is the software's "
               "too\n", run.path.c_str(), json_text(*theirs).c_str(), source.path.c_str(), json_text(*ours).c_str());
}

// The runs on the target machine that time its host (--target-host), loaded and checked.
std::optional<HostPace> target_host_pace(const ResultFile& source, const DeviceSpec& target) {
  if (g_analysis.target_host.empty()) return std::nullopt;
  std::vector<ResultFile> runs;
  std::vector<const ResultFile*> pointers;
  for (const auto& path : g_analysis.target_host) runs.push_back(load_result_for("predict", path));
  for (const auto& run : runs) {
    warn_of_another_gpu(run, target);
    warn_of_other_software(source, run);
    pointers.push_back(&run);
  }
  refuse_copies_of_one_run(pointers, "predict --target-host");
  return measure_host_pace(pointers);
}

void print_target_prediction(const ResultFile& r, const TargetPrediction& p) {
  std::printf("%s on %s (%s): epoch %s (step %s ms, %s-bound; from the %s)\n", r.model.c_str(),
              p.target_device.c_str(), p.precision.c_str(), format_duration(p.predicted_epoch_seconds).c_str(),
              format_significant(p.predicted_step_seconds * 1e3).c_str(), p.bound.c_str(), p.method.c_str());
  if (p.source_parts) {
    const auto ms = [](double seconds) { return format_fixed(seconds * 1e3, 2); };
    std::printf("  measured step %s ms = compute kernels %s + memory kernels %s + held (host, communication) %s\n",
                ms(p.source_step_seconds).c_str(), ms(p.source_parts->compute).c_str(),
                ms(p.source_parts->memory).c_str(), ms(p.source_parts->held).c_str());
    std::printf("  %s step %s ms = %s + %s + %s\n", p.target_host ? "with the source's host held:" : "predicted",
                ms(p.target_parts->total()).c_str(), ms(p.target_parts->compute).c_str(),
                ms(p.target_parts->memory).c_str(), ms(p.target_parts->held).c_str());
    // The other hypothesis for the source's host; the target's host, where given, replaces both.
    if (!p.target_host) {
      std::printf("  if the host's launching hides slower kernels: step %s ms = max(measured step, %s + %s)\n",
                  ms(*p.overlapped_step_seconds).c_str(), ms(p.target_parts->compute).c_str(),
                  ms(p.target_parts->memory).c_str());
    }
  }
  if (p.target_host) {
    const auto us = [](double seconds) { return format_fixed(seconds * 1e6, 1) + " us"; };
    std::string runs;
    for (const double each : p.target_host->by_run) runs += (runs.empty() ? "" : ", ") + us(each);
    const std::string ours =
        p.source_seconds_per_launch ? "; the source's host " + us(*p.source_seconds_per_launch) : "";
    std::printf("  the target's host: %s a kernel launch (the median of %zu run%s on it: %s)%s\n",
                us(p.target_host->seconds_per_launch).c_str(), p.target_host->from.size(),
                p.target_host->from.size() == 1 ? "" : "s", runs.c_str(), ours.c_str());
    std::printf("  predicted step %.2f ms = max(that host launching %.0f kernels %.2f ms, the GPU's kernels and "
                "waits %.2f ms)\n",
                p.predicted_step_seconds * 1e3, *p.launches_per_step, *p.target_host_step_seconds * 1e3,
                *p.target_device_step_seconds * 1e3);
  }
  warn_of_a_host_held_step(r, p);
  std::printf("  roofline%s: step %s ms (calibrated at %.0f%% of the measured device's peak)\n",
              r.peak_bytes_per_s ? "" : " (compute alone: the source records no memory bandwidth)",
              format_significant(p.roofline_step_seconds * 1e3).c_str(), 100 * p.source_efficiency);
  std::printf("  naive peak-TFLOPS ratio: epoch %s (step %s ms)\n", format_duration(p.naive_epoch_seconds).c_str(),
              format_significant(p.naive_step_seconds * 1e3).c_str());
  if (p.actual_epoch_seconds) {
    std::string others;
    if (p.additive_error_pct) others += "with the source's host " + signed_pct(*p.additive_error_pct) + ", ";
    if (p.overlapped_error_pct && !p.target_host) others += "overlapped " + signed_pct(*p.overlapped_error_pct) + ", ";
    std::printf("  actual: epoch %s: error %s (%sroofline %s, naive %s)\n", format_duration(*p.actual_epoch_seconds).c_str(),
                signed_pct(*p.error_pct).c_str(), others.c_str(),
                signed_pct(*p.roofline_error_pct).c_str(), signed_pct(*p.naive_error_pct).c_str());
  }
}

void print_epoch_prediction(const ResultFile& r, const EpochPrediction& p) {
  std::printf("%lld epochs of %s: %s (%s s) = warm-up overhead %s s + %lld x steady epoch %s s\n",
              static_cast<long long>(p.epochs), describe(r).c_str(), format_duration(p.predicted_seconds).c_str(),
              format_significant(p.predicted_seconds).c_str(), format_significant(p.warmup_overhead_seconds).c_str(),
              static_cast<long long>(p.epochs), format_significant(p.steady_epoch_seconds).c_str());
  const char* how = p.step_model == "flops line" ? "a line in their FLOPs, at these epochs' planned mean FLOPs per step"
                    : p.step_model == "mean"     ? "their mean"
                                                 : "their mean, scaled to these epochs' planned mean FLOPs per step";
  std::printf("  steady step %.4f s: %s over %zu timed steps\n", p.steady_step_seconds, how, r.step_seconds.size());
  if (p.from_partial_epoch) {
    std::printf("  no epoch completed: the time outside the steps is the partial epoch's\n");
  }
  if (const auto& ci = p.predicted_seconds_ci95) {
    std::string serial;
    if (const auto rho = p.step_lag1_autocorrelation; rho && *rho > 0) {  // worth fewer steps than ran
      serial = format_fixed(p.effective_steps, 1) + " independent steps' worth: lag-1 autocorrelation " +
               format_fixed(*rho, 2);
    }
    std::printf("  95%% CI %s .. %s s (the steady step's%s%s)\n", format_significant(ci->low).c_str(),
                format_significant(ci->high).c_str(), serial.empty() ? "" : "; ", serial.c_str());
  }
  if (p.predicted_with_eval_seconds) {
    std::printf("  with evaluation (%s s an epoch): %s (%s s)\n", format_significant(*p.eval_seconds_per_epoch).c_str(),
                format_duration(*p.predicted_with_eval_seconds).c_str(),
                format_significant(*p.predicted_with_eval_seconds).c_str());
  }
  if (p.naive_seconds) {
    std::printf("  naive (N x first epoch): %s (%s s)\n", format_duration(*p.naive_seconds).c_str(),
                format_significant(*p.naive_seconds).c_str());
  }
  if (p.actual_seconds) {
    const std::string naive = p.naive_error_pct ? " (naive " + signed_pct(*p.naive_error_pct) + ")" : "";
    std::printf("  actual: %s (%s s): error %s%s%s\n", format_duration(*p.actual_seconds).c_str(),
                format_significant(*p.actual_seconds).c_str(),
                signed_pct(*p.error_pct).c_str(), naive.c_str(),
                !p.actual_within_ci95 ? "" : *p.actual_within_ci95 ? ", inside the 95% CI" : ", outside the 95% CI");
  }
  if (p.actual_with_eval_seconds) {
    std::printf("  actual with evaluation: %s s: error %s\n", format_significant(*p.actual_with_eval_seconds).c_str(),
                signed_pct(*p.with_eval_error_pct).c_str());
  }
}

int predict_command() {
  const ResultFile r = load_result_for("predict", g_analysis.result);
  std::unique_ptr<ResultFile> actual;
  if (!g_analysis.actual.empty()) actual = std::make_unique<ResultFile>(load_result_for("predict", g_analysis.actual));
  // Scored against its own source, a prediction of the same epochs is right by construction.
  if (actual) refuse_copies_of_one_run({&r, actual.get()}, "predict --actual");
  if (g_analysis.epochs <= 0 && g_analysis.target.empty()) {
    throw input_error("predict: give --epochs N and/or --target GPU");
  }
  json out = {{"result", r.path}};
  if (actual && g_analysis.epochs > 0 && !g_analysis.target.empty()) {
    std::fprintf(stderr, "predict: note: --actual %s scores the --target prediction, not the %lld epochs'\n",
                 actual->path.c_str(), static_cast<long long>(g_analysis.epochs));
  }
  if (!g_analysis.target.empty() && r.device == "cpu") {
    std::fprintf(stderr, "predict: warning: %s ran on the CPU: its calibration carries a CPU's efficiency over to the "
                 "GPU, which tells little; predict from a run on a GPU\n", r.path.c_str());
  }
  if (g_analysis.epochs > 0) {
    const EpochPrediction p = predict_epochs(r, g_analysis.epochs, g_analysis.target.empty() ? actual.get() : nullptr);
    if (actual && g_analysis.target.empty() && actual->host != r.host) {
      std::fprintf(stderr, "predict: warning: %s ran on host %s, the prediction is for host %s\n", actual->path.c_str(),
                   actual->host.c_str(), r.host.c_str());
    }
    out["epochs"] = {{"epochs", p.epochs}, {"predicted_seconds", p.predicted_seconds},
                     {"naive_seconds", or_null(p.naive_seconds)}, {"steady_epoch_seconds", p.steady_epoch_seconds},
                     {"warmup_overhead_seconds", p.warmup_overhead_seconds},
                     {"from_partial_epoch", p.from_partial_epoch},
                     {"step_model", p.step_model}, {"steady_step_seconds", p.steady_step_seconds},
                     {"step_train_flops", or_null(p.step_train_flops)},
                     {"step_lag1_autocorrelation", or_null(p.step_lag1_autocorrelation)},
                     {"effective_steps", p.effective_steps},
                     {"eval_seconds_per_epoch", or_null(p.eval_seconds_per_epoch)},
                     {"predicted_with_eval_seconds", or_null(p.predicted_with_eval_seconds)}};
    const auto& ci = p.predicted_seconds_ci95;
    out["epochs"]["predicted_seconds_ci95"] = ci ? json::array({ci->low, ci->high}) : json(nullptr);
    if (p.actual_seconds) {
      out["epochs"]["actual_seconds"] = *p.actual_seconds;
      out["epochs"]["error_pct"] = *p.error_pct;
      out["epochs"]["naive_error_pct"] = or_null(p.naive_error_pct);
      out["epochs"]["actual_within_ci95"] = or_null(p.actual_within_ci95);
      out["epochs"]["actual_with_eval_seconds"] = or_null(p.actual_with_eval_seconds);
      out["epochs"]["with_eval_error_pct"] = or_null(p.with_eval_error_pct);
    }
    if (!g_analysis.as_json) print_epoch_prediction(r, p);
  }
  if (!g_analysis.target.empty()) {
    const bool is_file = g_analysis.target.find('/') != std::string::npos ||
                         g_analysis.target.find(".json") != std::string::npos;
    std::optional<DeviceSpec> target = is_file ? std::optional<DeviceSpec>(read_device_spec(g_analysis.target))
                                               : find_gpu(g_analysis.target);
    if (!target) {
      std::vector<std::string> known;
      for (const auto& g : known_gpus()) known.push_back(g.name);
      throw input_error("--target: '" + g_analysis.target + "' is not a known GPU (" + join(known) + ") or a spec file");
    }
    const std::optional<HostPace> host = target_host_pace(r, *target);
    const TargetPrediction p = predict_target(r, *target, actual.get(), host ? &*host : nullptr);
    if (actual) warn_of_another_gpu(*actual, *target);
    out["target"] = {{"source", p.source_device}, {"target", p.target_device}, {"precision", p.precision},
                     {"method", p.method}, {"flops_per_step", p.flops_per_step}, {"bytes_per_step", p.bytes_per_step},
                     {"source_efficiency", p.source_efficiency}, {"bound", p.bound},
                     {"predicted_step_seconds", p.predicted_step_seconds}, {"naive_step_seconds", p.naive_step_seconds},
                     {"roofline_step_seconds", p.roofline_step_seconds},
                     {"predicted_epoch_seconds", p.predicted_epoch_seconds}, {"naive_epoch_seconds", p.naive_epoch_seconds}};
    if (p.source_parts) {
      const auto parts = [](const StepParts& s) {
        return json{{"compute_seconds", s.compute}, {"memory_seconds", s.memory}, {"held_seconds", s.held}};
      };
      out["target"]["source_step_parts"] = parts(*p.source_parts);
      out["target"]["target_step_parts"] = parts(*p.target_parts);
      out["target"]["overlapped_step_seconds"] = *p.overlapped_step_seconds;
    }
    if (p.target_host) {
      out["target"]["target_host"] = {{"results", p.target_host->from},
                                      {"seconds_per_launch", p.target_host->seconds_per_launch},
                                      {"seconds_per_launch_by_run", p.target_host->by_run},
                                      {"source_seconds_per_launch", or_null(p.source_seconds_per_launch)},
                                      {"launches_per_step", *p.launches_per_step},
                                      {"host_step_seconds", *p.target_host_step_seconds},
                                      {"device_step_seconds", *p.target_device_step_seconds}};
    }
    if (p.actual_epoch_seconds) {
      out["target"]["actual_epoch_seconds"] = *p.actual_epoch_seconds;
      out["target"]["error_pct"] = *p.error_pct;
      out["target"]["naive_error_pct"] = *p.naive_error_pct;
      out["target"]["roofline_error_pct"] = *p.roofline_error_pct;
      if (p.overlapped_error_pct) out["target"]["overlapped_error_pct"] = *p.overlapped_error_pct;
      if (p.additive_error_pct) out["target"]["additive_error_pct"] = *p.additive_error_pct;
    }
    if (!g_analysis.as_json) print_target_prediction(r, p);
  }
  if (g_analysis.as_json) std::cout << json_text(out, 2) << "\n";
  return 0;
}

}  // namespace

void register_analysis_commands(CLI::App& app, std::function<int()>& action) {
  auto* report = app.add_subcommand("report", "table of epoch times by model and machine (or another key)");
  report->add_option("results", g_analysis.results, "result files")->required()->check(CLI::ExistingFile);
  auto* by = report->add_option("--by", g_analysis.by,
                                 "column key: machine, host, device, precision, threads, batch_size, seq_len, world_size, "
                                 "task, name, or a dotted spec field (e.g. model.sparse_last_layer)");
  auto* scaling = report->add_flag("--scaling", g_analysis.scaling,
                                   "data-parallel scaling: speedup and efficiency vs the 1-process run of the same config");
  auto* profile = report->add_flag("--profile", g_analysis.profile,
                                   "where each result's profiled steps went (timing.profile_steps), by kind of work, a "
                                   "column per result labelled by --by");
  profile->excludes(scaling);
  // --scaling has its own columns and baseline (the process counts, one process); --profile no speedups.
  scaling->excludes(by);
  report->add_option("--baseline", g_analysis.baseline, "column that speedups are relative to (default: the first)")
      ->excludes(scaling)
      ->excludes(profile);
  report->add_option("--format", g_analysis.format, "table, markdown, csv, json or html");
  report->add_option("-o,--output", g_analysis.output, "write to this file (atomically) instead of stdout");
  report->callback([&action] { action = report_command; });

  auto* compare = app.add_subcommand("compare", "throughput ratio B/A with a 95% confidence interval (A B, or A... --vs B...)");
  compare->add_option("results", g_analysis.results, "A B: result A (the reference) and result B; with --vs, A's runs")
      ->required()
      ->check(CLI::ExistingFile);
  compare->add_option("--vs", g_analysis.vs, "B's runs: repeats on each side give an interval from their spread")
      ->check(CLI::ExistingFile);
  compare->add_flag("--json", g_analysis.as_json, "machine-readable output");
  compare->callback([&action] { action = compare_command; });

  auto* predict = app.add_subcommand("predict", "predict N epochs, or another GPU's time, from a result");
  predict->add_option("result", g_analysis.result, "a measured result")->required()->check(CLI::ExistingFile);
  predict->add_option("--epochs", g_analysis.epochs, "predict the time of N epochs (1 to 1000000)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  auto* target = predict->add_option("--target", g_analysis.target, "a GPU (H100, A100, V100, T4, ...) or a device spec JSON file");
  predict->add_option("--actual", g_analysis.actual, "a real run to score the prediction against")->check(CLI::ExistingFile);
  auto* target_host = predict->add_option("--target-host", g_analysis.target_host,
                                          "runs on the target machine whose GPU waited for its host (any model): the "
                                          "pace its host launches kernels at (repeat it for more runs)")
                          ->check(CLI::ExistingFile)
                          ->allow_extra_args(false);  // one file each: the result that follows is the source
  target_host->needs(target);
  predict->add_flag("--json", g_analysis.as_json, "machine-readable output");
  predict->callback([&action] { action = predict_command; });
}

}  // namespace tbench
