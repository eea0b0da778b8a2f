#pragma once
// Sweeps: the cartesian product of grid values over a base spec, each point one `tbench run`
// in its own process (so a crash or an out-of-memory leaves the next point a clean device),
// its own result file with a stable name, resumable, with a state file and a summary table.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tbench/errors.hpp"

namespace tbench {

// The state file's schema id: <out_dir>/sweep.json, beside the points' results (`report DIR/*.json`
// takes it too, and leaves it out).
inline constexpr const char* kSweepStateSchemaId = "tbench.sweep/1";

struct SweepAxis {
  std::string key;                  // a spec field path, e.g. "precision" or "train.batch_size"
  std::vector<std::string> values;  // as written; read as YAML scalars like --set values
};

struct SweepPoint {
  int index = 0;                        // 0-based position in the product (SLURM array task id)
  int repeat = 1;                       // which of the setting's --repeat runs, from 1
  std::string id;                       // stable file stem, e.g. "model=tiny-bert,precision=fp32,rep=1"
  std::vector<std::string> overrides;   // --set arguments for this point
  std::string result_path;
  // pending, completed, failed, skipped (already done), interrupted; under --point, the others
  // as their result files stand (another array task may run them)
  std::string status = "pending";
  std::string reason;                   // why it failed
  int exit_code = -1;
};

struct SweepPlan {
  std::string spec_path;                  // "" = the embedded default spec
  std::vector<std::string> base_overrides;
  std::vector<SweepAxis> axes;
  int repeat = 1;
  std::string out_dir;
  std::vector<SweepPoint> points;
};

// A sweep of more points than this is a slip (an axis pasted twice, a --repeat of a billion):
// refused before its list is built.
inline constexpr std::int64_t kMaxSweepPoints = 100000;

// "--grid model=a,b" -> axis {model, [a, b]}.
SweepAxis parse_grid_option(const std::string& text);

// Builds the plan from --grid options and/or the spec's `sweep:` block (grid: {key: [values]},
// repeat: N, out_dir: path). Axes from the command line come after (and override) the spec's.
SweepPlan plan_sweep(const std::string& spec_path, const std::vector<std::string>& overrides,
                     const std::vector<std::string>& grid_options, int repeat, const std::string& out_dir);

struct SweepOptions {
  bool resume = false;   // skip points whose result exists and completed
  bool force = false;    // re-run points whose result exists
  bool quiet = false;
  int only_point = -1;   // run just this point (a SLURM array task)
  std::string binary;    // the tbench executable that runs each point
};

// --point: refuses an index past the plan's last point (bad input); -1 (every point) passes.
void check_point_index(const SweepPlan& plan, int point);

// Runs the plan's points in order, writing <out_dir>/sweep.json after each. Returns ok, run_failed
// (some point failed: the rest still ran) or interrupted.
ExitCode run_sweep(SweepPlan& plan, const SweepOptions& options);

// The state file's JSON (plan + each point's status).
nlohmann::json sweep_state(const SweepPlan& plan);

}  // namespace tbench
