#pragma once
// The subcommands of the tbench CLI (src/cli/commands.cpp).
#include <CLI/CLI.hpp>

namespace tbench {

// Adds every subcommand and its options to `app`.
void register_commands(CLI::App& app);
// Runs the subcommand the user chose; returns the process exit code.
int run_selected_command(CLI::App& app);

}  // namespace tbench
