// `tbench sweep`: many runs from one command (see include/tbench/sweep/sweep.hpp).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include <spdlog/spdlog.h>

#include "tbench/analysis/analysis.hpp"
#include "tbench/cli/commands.hpp"
#include "tbench/run/runner.hpp"
#include "tbench/sweep/sweep.hpp"
#include "tbench/json_text.hpp"

namespace tbench {
namespace {

using nlohmann::json;

struct SweepCliOptions {
  std::string spec_path, out_dir;
  std::vector<std::string> overrides, grid;
  int repeat = 0, point = -1;
  bool resume = false, force = false, dry_run = false, as_json = false, quiet = false;
};

SweepCliOptions g_sweep;

std::string self_executable() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) throw Error(ExitCode::internal, "cannot find the tbench executable (/proc/self/exe)");
  path[n] = '\0';
  return path;
}

// What a point runs, less what names it: its resolved spec without the name and output, the
// model (and teacher) as their configs read rather than as named (a shipped name and its config
// file are one network), and which repeat it is. On text data a config's folder may hold the
// tokenizer too (data.tokenizer.path unset): there the folder stays part of the setting.
std::string setting_of(const RunSpec& spec, const SpecModels& models, int repeat) {
  json setting = spec.resolved;
  setting.erase("name");
  setting.erase("output");
  setting["model"].erase("name");
  const json config = setting["model"]["config"];
  setting["model"].erase("config");
  if (setting["data"].value("source", "") != "synthetic" && config.is_string()) {
    std::error_code ec;
    const auto folder = std::filesystem::weakly_canonical(config.get<std::string>(), ec).parent_path();
    setting["model"]["config_folder"] = ec ? config.get<std::string>() : folder.string();
  }
  setting["model"]["network"] = models.model.raw;
  if (models.teacher) setting["distillation"]["teacher"] = models.teacher->raw;
  setting["repeat"] = repeat;
  return setting.dump();
}

// Two points of one setting would be one run counted twice in the table (as repeats with no
// spread): grid values that differ only in their spelling (2 and 02, a model's name and its
// config file).
void refuse_points_alike(std::map<std::string, const SweepPoint*>& by_setting, const SweepPoint& p, const std::string& setting) {
  const auto [it, first] = by_setting.emplace(setting, &p);
  if (first) return;
  throw input_error("sweep: points " + std::to_string(it->second->index) + " (" + it->second->id + ") and " +
                    std::to_string(p.index) + " (" + p.id + ") run one setting: their grid values differ only in " +
                    "how they are written (2 and 02, a model by name and by its config file); give each once");
}

// A typo in a grid key or value fails every point it reaches, each after a process start: refuse
// the sweep before the first point runs instead, naming the point and what `tbench run` would say.
// Only the points this call runs (--point picks one) are refused so; every point is checked for
// a twin. The data is read when a point runs.
void refuse_points_that_cannot_run(const SweepPlan& plan, int only_point) {
  std::string first;
  int refused = 0, checked = 0;
  std::map<std::string, const SweepPoint*> by_setting;
  for (const auto& p : plan.points) {
    const bool selected = only_point < 0 || p.index == only_point;
    checked += selected;
    std::string setting;
    try {
      const RunSpec spec = load_spec(plan.spec_path, p.overrides);
      setting = setting_of(spec, check_models_and_device(spec), p.repeat);
    } catch (const Error& e) {
      if (e.code() != ExitCode::bad_input) throw;
      if (selected && refused++ == 0) first = "sweep point " + std::to_string(p.index) + " (" + p.id + "): " + e.what();
      continue;
    }
    refuse_points_alike(by_setting, p, setting);
  }
  if (refused == 0) return;
  throw input_error(first + (refused > 1 ? " (" + std::to_string(refused) + " of " + std::to_string(checked) +
                                               " points are refused; nothing ran)"
                                         : " (nothing ran)"));
}

// Lists the points (only --point's, when given) and where their results go.
int dry_run(const SweepPlan& plan, int only_point) {
  if (g_sweep.as_json) {
    json state = sweep_state(plan);
    if (only_point >= 0) state["points"] = json::array({state["points"][only_point]});
    std::cout << json_text(state, 2) << "\n";
    return 0;
  }
  for (const auto& p : plan.points) {
    if (only_point >= 0 && p.index != only_point) continue;
    std::string sets;
    for (std::size_t i = plan.base_overrides.size(); i + 2 < p.overrides.size(); ++i) sets += " " + p.overrides[i];
    std::printf("%3d  %-60s %s\n", p.index, p.result_path.c_str(), sets.c_str());
  }
  if (only_point >= 0) {
    std::printf("point %d of %zu, result in %s\n", only_point, plan.points.size(), plan.out_dir.c_str());
  } else {
    std::printf("%zu points, results in %s\n", plan.points.size(), plan.out_dir.c_str());
  }
  return 0;
}

int sweep_command() {
  if (g_sweep.quiet) spdlog::set_level(spdlog::level::warn);
  SweepPlan plan = plan_sweep(g_sweep.spec_path, g_sweep.overrides, g_sweep.grid, g_sweep.repeat, g_sweep.out_dir);
  check_point_index(plan, g_sweep.point);
  refuse_points_that_cannot_run(plan, g_sweep.point);
  if (g_sweep.dry_run) return dry_run(plan, g_sweep.point);
  SweepOptions options;
  options.resume = g_sweep.resume;
  options.force = g_sweep.force;
  options.quiet = g_sweep.quiet;
  options.only_point = g_sweep.point;
  options.binary = self_executable();
  const ExitCode code = run_sweep(plan, options);

  // The table: every finished point's result (under --point, the other tasks' too, as they stand).
  std::vector<ResultFile> results;
  for (const auto& p : plan.points) {
    if (p.status != "completed" && p.status != "skipped") continue;
    try {
      results.push_back(load_result(p.result_path));
    } catch (const Error& e) {
      if (e.code() != ExitCode::bad_input) throw;
      std::fprintf(stderr, "sweep: point %d (%s) left out of the table: %s\n", p.index, p.id.c_str(), e.what());
    }
  }
  json summary = sweep_state(plan);
  if (!results.empty()) {
    const Report report = build_report(results, "name", "");
    // Points of another batch size or world size train other counts an epoch: their speedup is
    // per trained sample, as report says beside its table.
    for (const auto& line : report.unlike_samples) std::fprintf(stderr, "sweep: note: %s\n", line.c_str());
    if (g_sweep.as_json) {
      summary["report"] = report_json(report);
    } else {
      std::cout << render_report(report, "table");
    }
  }
  if (g_sweep.as_json) std::cout << json_text(summary, 2) << "\n";
  // A failed point has no result, so no cell: name it beside the table.
  int failed = 0;
  for (const auto& p : plan.points) {
    if (p.status != "failed") continue;
    ++failed;
    std::fprintf(stderr, "sweep: point %d (%s) failed%s%s\n", p.index, p.id.c_str(), p.reason.empty() ? "" : ": ",
                 p.reason.c_str());
  }
  std::fprintf(stderr, "sweep: %zu points, %d failed; state in %s/sweep.json\n", plan.points.size(), failed,
               plan.out_dir.c_str());
  return static_cast<int>(code);
}

}  // namespace

void register_sweep_command(CLI::App& app, std::function<int()>& action) {
  auto* sweep = app.add_subcommand("sweep", "run the cartesian product of --grid values (or the spec's sweep: block)");
  sweep->add_option("spec", g_sweep.spec_path, "base run spec (default: the embedded default)");
  sweep->add_option("--grid", g_sweep.grid, "key=v1,v2,... (repeatable): one axis of the product")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sweep->add_option("--set", g_sweep.overrides, "override a base field (repeatable)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sweep->add_option("--repeat", g_sweep.repeat, "runs per point (results averaged in the table)")
      ->check(CLI::Range(1, static_cast<int>(kMaxSweepPoints)));
  sweep->add_option("--out-dir", g_sweep.out_dir, "directory for the points' results (default results/sweep-<name>)");
  sweep->add_option("--point", g_sweep.point, "run only this point index (e.g. $SLURM_ARRAY_TASK_ID)")->check(CLI::NonNegativeNumber);
  auto* resume = sweep->add_flag("--resume", g_sweep.resume, "skip points whose result exists and completed");
  sweep->add_flag("--force", g_sweep.force, "re-run points whose result exists")->excludes(resume);
  sweep->add_flag("--dry-run", g_sweep.dry_run, "list the points and where their results go; run nothing");
  sweep->add_flag("--json", g_sweep.as_json, "print the sweep's state and table as JSON on stdout");
  sweep->add_flag("-q,--quiet", g_sweep.quiet, "less logging");
  sweep->callback([&action] { action = sweep_command; });
}

}  // namespace tbench
