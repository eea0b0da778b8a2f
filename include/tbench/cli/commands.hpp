#pragma once
// The subcommands of the tbench CLI: run, validate, models, env and schema in src/cli/commands.cpp;
// report, compare and predict in analysis_commands.cpp; sweep_command.cpp; data_command.cpp.
#include <functional>

#include <CLI/CLI.hpp>

namespace tbench {

// Adds every subcommand and its options to `app`.
void register_commands(CLI::App& app);
// report, compare, predict (src/cli/analysis_commands.cpp); sets `action` when one is chosen.
void register_analysis_commands(CLI::App& app, std::function<int()>& action);

// sweep (src/cli/sweep_command.cpp).
void register_sweep_command(CLI::App& app, std::function<int()>& action);

// data (src/cli/data_command.cpp).
void register_data_command(CLI::App& app, std::function<int()>& action);

// Runs the subcommand the user chose; returns the process exit code.
int run_selected_command(CLI::App& app);

}  // namespace tbench
