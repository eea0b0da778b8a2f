// `tbench sweep`: many runs from one command (see include/tbench/sweep/sweep.hpp).
#include <unistd.h>

#include <cstdio>
#include <iostream>

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

// A typo in a grid key or value fails every point it reaches, each after a process start: refuse
// the sweep before the first point runs instead, naming the point and what `tbench run` would say.
// Only the points this call runs (--point picks one); the data is read when a point runs.
void refuse_points_that_cannot_run(const SweepPlan& plan, int only_point) {
  std::string first;
  int refused = 0, checked = 0;
  for (const auto& p : plan.points) {
    if (only_point >= 0 && p.index != only_point) continue;
    ++checked;
    try {
      check_models_and_device(load_spec(plan.spec_path, p.overrides));
    } catch (const Error& e) {
      if (e.code() != ExitCode::bad_input) throw;
      if (refused++ == 0) first = "sweep point " + std::to_string(p.index) + " (" + p.id + "): " + e.what();
    }
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

  std::vector<ResultFile> results;
  for (const auto& p : plan.points) {
    if (p.status == "completed" || p.status == "skipped") results.push_back(load_result(p.result_path));
  }
  json summary = sweep_state(plan);
  if (!results.empty()) {
    const Report report = build_report(results, "name", "");
    if (g_sweep.as_json) {
      summary["report"] = report_json(report);
    } else {
      std::cout << render_report(report, "table");
    }
  }
  if (g_sweep.as_json) std::cout << json_text(summary, 2) << "\n";
  int failed = 0;
  for (const auto& p : plan.points) failed += p.status == "failed";
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
  sweep->add_option("--repeat", g_sweep.repeat, "runs per point (results averaged in the table)")->check(CLI::PositiveNumber);
  sweep->add_option("--out-dir", g_sweep.out_dir, "directory for the points' results (default results/sweep-<name>)");
  sweep->add_option("--point", g_sweep.point, "run only this point index (e.g. $SLURM_ARRAY_TASK_ID)")->check(CLI::NonNegativeNumber);
  sweep->add_flag("--resume", g_sweep.resume, "skip points whose result exists and completed");
  sweep->add_flag("--force", g_sweep.force, "re-run points whose result exists");
  sweep->add_flag("--dry-run", g_sweep.dry_run, "list the points and where their results go; run nothing");
  sweep->add_flag("--json", g_sweep.as_json, "print the sweep's state and table as JSON on stdout");
  sweep->add_flag("-q,--quiet", g_sweep.quiet, "less logging");
  sweep->callback([&action] { action = sweep_command; });
}

}  // namespace tbench
