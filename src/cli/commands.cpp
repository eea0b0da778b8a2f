#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>

#include <spdlog/spdlog.h>

#include "tbench/cli/commands.hpp"
#include "tbench/embedded.hpp"
#include "tbench/env/env.hpp"
#include "tbench/models/model_cost.hpp"
#include "tbench/run/runner.hpp"
#include "tbench/json_text.hpp"
#include "tbench/timing/stats.hpp"

namespace tbench {
namespace {

using nlohmann::json;

struct Options {
  std::string spec_path;
  std::vector<std::string> overrides;
  std::string output;  // -o: shorthand for --set output=...
  bool force = false;
  bool quiet = false;
  bool print = false;
  bool fields = false;
  bool as_json = false;
  int64_t seq_len = 128;
  std::string log_level = "info";
  std::string dump_params;
  int64_t fail_at_step = 0;
  int64_t hang_at_step = 0;
  bool die_after_training = false;
};

Options g_options;
std::function<int()> g_action;

void set_log_level() {
  spdlog::set_level(g_options.quiet ? spdlog::level::warn : spdlog::level::from_str(g_options.log_level));
}

// The spec with --set overrides and -o applied.
RunSpec load_spec_from_options() { return load_spec(g_options.spec_path, g_options.overrides, g_options.output); }

int run_command() {
  set_log_level();
  const RunPlan plan = prepare_run(load_spec_from_options());
  RunOptions options;
  options.force = g_options.force;
  options.quiet = g_options.quiet;
  options.dump_params = g_options.dump_params;
  options.fail_at_step = g_options.fail_at_step;
  options.hang_at_step = g_options.hang_at_step;
  options.die_after_training = g_options.die_after_training;
  options.interrupt_after_training = std::getenv("TBENCH_TEST_INTERRUPT_AFTER_TRAINING") != nullptr;
  const ExitCode code = execute_run(plan, options);
  if (plan.launch.rank == 0) std::printf("%s\n", plan.output_path.c_str());  // only rank 0 writes a result
  return static_cast<int>(code);
}

int validate_command() {
  set_log_level();
  if (g_options.fields) {
    std::cout << json_text(spec_field_reference(), 2) << "\n";
    return 0;
  }
  const RunPlan plan = prepare_run(load_spec_from_options());
  if (g_options.print) {
    std::cout << json_text(plan.spec.resolved, 2) << "\n";
  } else {
    std::cout << plan.spec.source << ": ok (" << plan.model.name << ", " << plan.steps.total_steps
              << " optimizer steps, output " << plan.output_path << ")\n";
  }
  return 0;
}

std::string with_thousands(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

int models_command() {
  json rows = json::array();
  for (const auto& name : shipped_model_names()) {
    const ModelConfig c = shipped_model_config(name);
    const ModelCost cost = model_cost(c, 2, g_options.seq_len);
    json row = {{"name", name}, {"arch", to_string(c.arch)}, {"layers", c.num_layers},
                {"hidden", c.hidden_size}, {"heads", c.num_heads}, {"vocab", c.vocab_size},
                {"base_params", cost.base_params}, {"classifier_params", cost.classifier_params},
                {"train_flops_per_sample", cost.train_flops_per_sample}, {"seq_len", g_options.seq_len},
                {"max_seq_len", c.usable_positions() > 0 ? json(c.usable_positions()) : json(nullptr)}};
    // The pre-training head: *ForMaskedLM, or XLNet's permutation LM (XLNetLMHeadModel).
    const ModelCost lm = model_cost(c, 2, g_options.seq_len, c.arch == Architecture::xlnet ? Task::plm : Task::mlm);
    row["masked_lm_params"] = lm.classifier_params;
    row["masked_lm_train_flops_per_sample"] = lm.train_flops_per_sample;
    rows.push_back(row);
  }
  if (g_options.as_json) {
    std::cout << json_text(rows, 2) << "\n";
    return 0;
  }
  std::printf("%-36s %-10s %6s %6s %13s %13s %14s %13s %10s\n", "model", "arch", "layers", "hidden", "base params",
              "classifier", "GFLOP/sample", "masked LM", "MLM GFLOP");
  // A length past a model's positions is counted all the same, and marked: no run could take it.
  bool any_too_long = false;
  for (const auto& r : rows) {
    const bool too_long = r["max_seq_len"].is_number() && g_options.seq_len > r["max_seq_len"].get<int64_t>();
    any_too_long = any_too_long || too_long;
    std::printf("%-36s %-10s %6lld %6lld %13s %13s %14.1f %13s %10s%s\n", r["name"].get<std::string>().c_str(),
                r["arch"].get<std::string>().c_str(), static_cast<long long>(r["layers"].get<int64_t>()),
                static_cast<long long>(r["hidden"].get<int64_t>()), with_thousands(r["base_params"]).c_str(),
                with_thousands(r["classifier_params"]).c_str(), r["train_flops_per_sample"].get<double>() / 1e9,
                with_thousands(r["masked_lm_params"]).c_str(),
                format_fixed(r["masked_lm_train_flops_per_sample"].get<double>() / 1e9, 1).c_str(), too_long ? " *" : "");
  }
  if (any_too_long) {
    std::printf("* takes at most max_seq_len positions (models --json): a run at seq_len %lld is refused\n",
                static_cast<long long>(g_options.seq_len));
  }
  std::printf("(training FLOPs per sample at seq_len %lld, forward + backward; classifier: 2-label head; masked LM:\n"
              " *ForMaskedLM, the vocabulary projected at every position; for XLNet its permutation LM, the query\n"
              " stream and the head at every position)\n",
              static_cast<long long>(g_options.seq_len));
  return 0;
}

int env_command() {
  std::cout << json_text(collect_env(), 2) << "\n";
  return 0;
}

int schema_command() {
  std::cout << embedded::result_schema();
  return 0;
}

void add_spec_options(CLI::App* cmd, bool spec_required) {
  auto* spec = cmd->add_option("spec", g_options.spec_path, "run spec (.json, .yaml, .yml)");
  if (spec_required) spec->required();
  cmd->add_option("--set", g_options.overrides, "override a field: --set train.batch_size=16 (repeatable)")
      ->allow_extra_args(false)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("-o,--output", g_options.output,
                  "result path, placeholders allowed: the same as --set output=PATH");
  cmd->add_option("--log-level", g_options.log_level, "trace, debug, info, warn, error, critical, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "warning", "error", "critical", "off"}));
}

}  // namespace

void register_commands(CLI::App& app) {
  auto* run = app.add_subcommand("run", "train for timed epochs and write a result (no SPEC: the embedded default)");
  add_spec_options(run, false);
  run->add_flag("--force", g_options.force, "overwrite an existing result file");
  run->add_flag("-q,--quiet", g_options.quiet, "no progress output");
  // Hidden, for tests: the trained parameters as raw float32 (data-parallel: PATH.rank<N> per rank).
  run->add_option("--dump-params", g_options.dump_params, "")->group("");
  // Hidden, for tests: global step N fails as a step whose record cannot be written would.
  run->add_option("--fail-at-step", g_options.fail_at_step, "")->check(CLI::PositiveNumber)->group("");
  // Hidden, for tests: after global step N the host hangs for good, its process alive (a write that
  // never returns).
  run->add_option("--hang-at-step", g_options.hang_at_step, "")->check(CLI::PositiveNumber)->group("");
  // Hidden, for tests: the process ends as a killed one would, right after its last step.
  run->add_flag("--die-after-training", g_options.die_after_training, "")->group("");
  run->callback([] { g_action = run_command; });

  auto* validate = app.add_subcommand("validate", "check a spec (and the model it names) without running");
  add_spec_options(validate, false);
  validate->add_flag("--print", g_options.print, "print the resolved spec (defaults filled) as JSON");
  auto* fields = validate->add_flag("--fields", g_options.fields, "print every spec field with type, default and help");
  // The field list is the same for every spec: a spec given with it would be silently ignored.
  for (const char* name : {"spec", "--set", "--output", "--print"}) fields->excludes(validate->get_option(name));
  validate->callback([] {
    if (g_options.spec_path.empty() && !g_options.fields) {
      throw CLI::RequiredError("spec (or --fields)");
    }
    g_action = validate_command;
  });

  auto* models = app.add_subcommand("models", "list shipped models with parameters and training FLOPs per sample");
  models->add_flag("--json", g_options.as_json, "machine-readable output");
  models->add_option("--seq-len", g_options.seq_len, "sequence length for the FLOPs column")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  models->callback([] { g_action = models_command; });

  register_analysis_commands(app, g_action);
  register_sweep_command(app, g_action);
  register_data_command(app, g_action);
  app.add_subcommand("env", "print the machine as a result records it")->callback([] { g_action = env_command; });
  app.add_subcommand("schema", "print the result file's JSON Schema")->callback([] { g_action = schema_command; });
}

int run_selected_command(CLI::App&) { return g_action ? g_action() : 0; }

}  // namespace tbench
