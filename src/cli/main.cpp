// tbench command line: run, sweep, validate, data, report (and report --scaling), compare, predict,
// models, env, schema; each is registered by its file in src/cli/. Logs and progress go to stderr;
// stdout carries only what a script would read (a result path, a table, JSON).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "tbench/cli/commands.hpp"
#include "tbench/errors.hpp"
#include "tbench/process_end.hpp"
#include "tbench/version.hpp"

namespace {

int run_command_line(int argc, char** argv) {
  // A file-size limit (ulimit -f, common on clusters) would kill us with SIGXFSZ mid-write; ignored,
  // the write fails with EFBIG instead and the run ends with an error that says so.
  std::signal(SIGXFSZ, SIG_IGN);
  auto logger = spdlog::stderr_color_mt("tbench");
  logger->set_pattern("[%H:%M:%S] %^%l%$ %v");
  spdlog::set_default_logger(logger);

  CLI::App app{"tbench: benchmark transformer fine-tuning on LibTorch"};
  app.require_subcommand(1);
  // The revision too ("-dirty": built with tracked files changed), as every result records it.
  app.set_version_flag("--version", "tbench " + std::string(tbench::version()) + " (git " + tbench::git_sha() + ")");
  tbench::register_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help or the parse error
    return code == 0 ? 0 : static_cast<int>(tbench::ExitCode::bad_input);
  }
  try {
    return tbench::run_selected_command(app);
  } catch (const tbench::Error& e) {
    spdlog::error("{}", e.what());
    return static_cast<int>(e.code());
  } catch (const c10::Error& e) {
    spdlog::error("internal error (LibTorch): {}", e.what_without_backtrace());
    return static_cast<int>(tbench::ExitCode::internal);
  } catch (const std::exception& e) {
    spdlog::error("internal error: {}", e.what());
    return static_cast<int>(tbench::ExitCode::internal);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int code = run_command_line(argc, argv);
  if (tbench::g_skip_static_destructors) {
    spdlog::debug("ending without static destructors: a process group's threads still run");
    spdlog::default_logger()->flush();
    std::cout.flush();
    std::fflush(nullptr);
    std::_Exit(code);
  }
  return code;
}
