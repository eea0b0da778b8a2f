#include "tbench/sweep/sweep.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include <spdlog/spdlog.h>

#include "tbench/analysis/analysis.hpp"
#include "tbench/files.hpp"
#include "tbench/results/result_files.hpp"
#include "tbench/run/runner.hpp"
#include "tbench/spec/spec.hpp"
#include "tbench/stable_hash.hpp"
#include "tbench/json_text.hpp"
#include "tbench/text.hpp"

namespace tbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

volatile std::sig_atomic_t g_sweep_interrupted = 0;
volatile pid_t g_running_child = 0;

// Every signal that stops the sweep reaches its running point once, from here: the point runs in
// a process group of its own (see run_point), so a terminal's Ctrl-C reaches the sweep alone. Sent
// twice (by the terminal and by the sweep), a point's second Ctrl-C would kill it unwritten.
extern "C" void on_sweep_signal(int signal) {
  g_sweep_interrupted = 1;
  if (g_running_child > 0) kill(g_running_child, signal);
}

std::string scalar_text(const json& value) { return value.is_string() ? value.get<std::string>() : json_text(value); }

// File-name-safe rendering of a value: letters, digits, '.', '-', '_' kept, the rest '_'.
std::string file_safe(const std::string& text) {
  std::string out;
  for (unsigned char c : text) out += std::isalnum(c) || c == '.' || c == '-' || c == '_' ? static_cast<char>(c) : '_';
  return out;
}

// 16 hex digits of a stable hash: a shortened point id names the same file next time.
std::string stable_hash_hex(const std::string& text) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(text)));
  return hex;
}

// A file name holds at most 255 bytes, and a point's files add ".iterations.jsonl" or a temporary
// suffix to its id: a longer id (long values, a config path on the model axis) keeps its start and
// a hash of the whole, then its repeat's "__rep-N", so it stays one point's and the same from call
// to call.
std::string bounded_id(const std::string& values, const std::string& repeat_suffix) {
  constexpr std::size_t kMaxIdLength = 180;
  if (values.size() + repeat_suffix.size() <= kMaxIdLength) return values + repeat_suffix;
  return values.substr(0, kMaxIdLength - 18 - repeat_suffix.size()) + "__" + stable_hash_hex(values) + repeat_suffix;
}

std::string base_name(const SpecDocument& doc, const std::string& spec_path) {
  if (doc.root.contains("name") && doc.root["name"].is_string()) return doc.root["name"];
  if (spec_path.empty()) return "default";
  return fs::path(spec_path).stem().string();
}

// Two points with one result file would overwrite each other (each point runs with --force), and
// the table would count the survivor twice: a value repeated on an axis, or two values that are
// the same file name (file_safe turns "a/b" and "a_b" alike).
void refuse_points_sharing_a_result(const SweepPlan& plan) {
  std::map<std::string, const SweepPoint*> by_path;
  for (const auto& p : plan.points) {
    const auto [it, first] = by_path.emplace(p.result_path, &p);
    if (first) continue;
    throw input_error("sweep: points " + std::to_string(it->second->index) + " and " + std::to_string(p.index) +
                      " would both write " + p.result_path +
                      ": give each grid value once, and values that differ in more than their punctuation");
  }
}

void build_points(SweepPlan& plan, const std::string& name) {
  std::vector<std::size_t> index(plan.axes.size(), 0);
  int position = 0;
  while (true) {
    for (int rep = 1; rep <= plan.repeat; ++rep) {
      SweepPoint p;
      p.index = position++;
      p.repeat = rep;
      std::string id, label;
      p.overrides = plan.base_overrides;
      for (std::size_t a = 0; a < plan.axes.size(); ++a) {
        const auto& axis = plan.axes[a];
        const std::string& value = axis.values[index[a]];
        id += (id.empty() ? "" : "__") + file_safe(axis.key) + "-" + file_safe(value);
        p.overrides.push_back(axis.key + "=" + value);
        if (axis.key != "model") label += (label.empty() ? "" : ",") + axis.key + "=" + value;
      }
      std::string repeat_suffix;
      if (plan.repeat > 1) repeat_suffix = (id.empty() ? "" : "__") + std::string("rep-") + std::to_string(rep);
      if (id.empty() && repeat_suffix.empty()) id = "base";
      p.id = bounded_id(id, repeat_suffix);
      p.result_path = (fs::path(plan.out_dir) / (p.id + ".json")).string();
      // Points that differ only in model or repeat share a name: the report's columns.
      p.overrides.push_back("name=" + yaml_quoted(name + (label.empty() ? "" : "[" + label + "]")));
      p.overrides.push_back("output=" + yaml_quoted(p.result_path));
      plan.points.push_back(p);
    }
    // Odometer over the axes, last axis fastest.
    std::size_t a = plan.axes.size();
    while (a > 0) {
      --a;
      if (++index[a] < plan.axes[a].values.size()) break;
      index[a] = 0;
      if (a == 0) return;
    }
    if (plan.axes.empty()) return;
  }
}

// The fields a sweep sets for each point itself (its bookkeeping): an axis of one would be
// overridden unseen, and so would a base --set of `output`. `name` and `sweep.*` may be set for
// the base: they name the sweep and shape it.
void refuse_a_field_the_sweep_sets(const std::string& key, const std::string& where, bool axis) {
  if (!(axis ? is_bookkeeping_field(key) : key == "output")) return;
  throw input_error(where + ": the sweep sets " + key + " itself" +
                    (key == "output" ? " (each point's result is <out_dir>/<point id>.json: give --out-dir)"
                     : key == "name" ? " (each point's name is the base name and its grid values)"
                                     : " (the sweep's own settings are no axis)"));
}

std::string override_key(const std::string& override_text) { return override_text.substr(0, override_text.find('=')); }

void refuse_too_many_points(const SweepPlan& plan) {
  std::int64_t count = plan.repeat;
  for (const auto& axis : plan.axes) {
    count *= static_cast<std::int64_t>(axis.values.size());
    if (count > kMaxSweepPoints) {
      throw input_error("sweep: more than " + std::to_string(kMaxSweepPoints) +
                        " points (the product of the axes' values, times --repeat): split the sweep");
    }
  }
}

// An output folder with a placeholder would be expanded by each point's run (its result in
// o/vm/) but not by the sweep (its state and logs in o/{host}/), and --resume would find nothing.
void refuse_a_placeholder_in_the_folder(const std::string& out_dir, const std::string& where) {
  const auto open = out_dir.find('{');
  if (open == std::string::npos || out_dir.find('}', open) == std::string::npos) return;
  throw input_error(where + ": '" + out_dir + "' holds a placeholder, which a sweep does not expand (its points' " +
                    "files are named by their grid values): give the folder as it is, e.g. results/$(hostname)");
}

struct EarlierResult {
  std::string status = "unreadable";
  json spec;  // as the run recorded it
};

EarlierResult read_earlier_result(const std::string& path) {
  EarlierResult earlier;
  try {
    std::ifstream in(path);
    json j;
    in >> j;
    earlier.status = j.at("summary").at("status");
    earlier.spec = j.at("spec");
  } catch (const std::exception&) {
    earlier.status = "unreadable";
  }
  return earlier;
}

// A completed point is kept by --resume only if it ran the spec the point asks for now: a base spec
// or --set edited between the runs would otherwise mix two settings in one table, unseen.
void refuse_a_point_run_with_another_spec(const SweepPlan& plan, const SweepPoint& p, const EarlierResult& earlier) {
  const std::vector<std::string> changes = spec_changes(load_spec(plan.spec_path, p.overrides).resolved, earlier.spec);
  if (changes.empty()) return;
  throw Error(ExitCode::result_exists, p.result_path + ": completed with another spec than point " +
                                           std::to_string(p.index) + " asks for now (" + join(changes) +
                                           "); pass --force to redo the points, or give another --out-dir");
}

// Why a completed result is no finished point (`report` refuses the file: cut short, edited), or
// "" if it is one. A run too short to analyse is finished: running it again changes nothing.
std::string why_unusable(const std::string& path) {
  try {
    load_result(path);
    return "";
  } catch (const TooShortToAnalyse&) {
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

// The files a sweep reads: its base spec, and any --set or grid value that names a file (a model's
// config, a corpus, weights).
std::vector<std::string> input_files(const SweepPlan& plan) {
  std::vector<std::string> files;
  if (!plan.spec_path.empty()) files.push_back(plan.spec_path);
  std::error_code ec;
  const auto add_value = [&](const std::string& value) {
    if (fs::is_regular_file(value, ec)) files.push_back(value);
  };
  for (const auto& o : plan.base_overrides) add_value(o.substr(o.find('=') + 1));
  for (const auto& axis : plan.axes) {
    for (const auto& value : axis.values) add_value(value);
  }
  return files;
}

std::string log_path_of(const SweepPlan& plan, const SweepPoint& p) {
  return (fs::path(plan.out_dir) / (p.id + ".log")).string();
}

std::string state_path(const SweepPlan& plan) { return (fs::path(plan.out_dir) / "sweep.json").string(); }

// Every file a point's run may write (the trace and MLPerf log where the spec asks for them).
std::vector<std::string> point_files(const SweepPlan& plan, const SweepPoint& p) {
  return {p.result_path, iterations_path_for(p.result_path), trace_path_for(p.result_path),
          mllog_path_for(p.result_path), log_path_of(plan, p)};
}

// Each point runs with --force, and the state file is rewritten after each: a base spec kept in
// the output folder as "base.json" or "sweep.json" would be overwritten by the sweep's own files.
void refuse_outputs_onto_inputs(const SweepPlan& plan) {
  const std::vector<std::string> inputs = input_files(plan);
  const auto check = [&](const std::string& output) {
    std::error_code ec;
    for (const auto& input : inputs) {
      if (!fs::equivalent(output, input, ec)) continue;
      throw input_error(output + ": the sweep would overwrite " + input +
                        ", a file it reads: give another --out-dir, or keep the input outside it");
    }
  };
  check(state_path(plan));
  for (const auto& p : plan.points) {
    for (const auto& file : point_files(plan, p)) check(file);
  }
}

// Results in the folder that are no point's (an earlier --repeat or grid) would join
// `report <out_dir>/*.json` unseen.
void warn_of_results_of_no_point(const SweepPlan& plan) {
  std::set<fs::path> own = {fs::path(state_path(plan)).filename()};
  for (const auto& p : plan.points) {
    for (const auto& file : point_files(plan, p)) own.insert(fs::path(file).filename());
  }
  std::vector<std::string> others;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(plan.out_dir, ec)) {
    if (entry.path().extension() == ".json" && !own.count(entry.path().filename())) {
      others.push_back(entry.path().filename().string());
    }
  }
  if (others.empty()) return;
  std::sort(others.begin(), others.end());
  const std::size_t shown = std::min<std::size_t>(others.size(), 3);
  std::string names = join(std::vector<std::string>(others.begin(), others.begin() + static_cast<long>(shown)));
  if (others.size() > shown) names += ", ...";
  spdlog::warn("{} holds {} .json file(s) of no point of this sweep ({}): `tbench report {}/*.json` would count them",
               plan.out_dir, others.size(), names, plan.out_dir);
}

// The last error line the run logged (bad input writes no result), else its exit code.
std::string failure_reason_in_log(const SweepPoint& p, const std::string& log_path) {
  std::ifstream log(log_path);
  std::string line, last;
  while (std::getline(log, line)) {
    if (line.find("error") != std::string::npos) last = line;
  }
  const auto at = last.find("error ");
  return at == std::string::npos ? "exit code " + std::to_string(p.exit_code) : last.substr(at + 6);
}

// The error the result recorded, else the log's.
std::string failure_reason(const SweepPoint& p, const std::string& log_path) {
  if (fs::exists(p.result_path)) {
    try {
      std::ifstream in(p.result_path);
      json j;
      in >> j;
      if (j["summary"]["error"].is_string()) return j["summary"]["error"];
    } catch (const std::exception&) {
    }
  }
  return failure_reason_in_log(p, log_path);
}

// The spec a point runs, as a stable hash: the end line of its log names it, so that another
// array task can tell a failure of this sweep's point from one of an earlier spec.
std::string point_spec_hash(const SweepPlan& plan, const SweepPoint& p) {
  return stable_hash_hex(load_spec(plan.spec_path, p.overrides).resolved.dump());
}

// The resolved spec a point asks for now, or none where it no longer loads (the base edited into a
// bad state while points run): nothing matches it, so such a point reads as pending rather than
// ending the sweep.
std::optional<json> spec_asked_now(const SweepPlan& plan, const SweepPoint& p) {
  try {
    return load_spec(plan.spec_path, p.overrides).resolved;
  } catch (const Error&) {
    return std::nullopt;
  }
}

constexpr const char* kEndLinePrefix = "tbench sweep: point ended ";

// After a point's process ends, the sweep adds a last line to its log: its verdict (completed,
// failed, interrupted: the sweep's, which a signal may have set whatever the exit code), the exit
// code and the spec it ran. A point that fails on bad input writes no result, and without this
// line another array task (--point) could not tell it from one not yet run.
void append_end_line(const std::string& log_path, const SweepPoint& p, const std::string& spec_hash) {
  std::ofstream log(log_path, std::ios::app);
  log << kEndLinePrefix << p.status << ", exit code " << p.exit_code << ", spec " << spec_hash << "\n";
}

struct LoggedEnd {
  std::string status;
  int exit_code = -1;
  std::string spec_hash;
};

// The end line, if the log's last line is one (a point still running, or killed with its sweep,
// has none).
std::optional<LoggedEnd> read_end_line(const std::string& log_path) {
  std::ifstream log(log_path);
  std::string line, last;
  while (std::getline(log, line)) {
    if (!line.empty()) last = line;
  }
  if (last.rfind(kEndLinePrefix, 0) != 0) return std::nullopt;
  LoggedEnd end;
  char status[16] = {}, hash[17] = {};
  if (std::sscanf(last.c_str() + std::strlen(kEndLinePrefix), "%15[a-z], exit code %d, spec %16[0-9a-f]", status,
                  &end.exit_code, hash) != 3) {
    return std::nullopt;
  }
  end.status = status;
  end.spec_hash = hash;
  return end;
}

// Whether `log` was written after `result` (a --force'd run that failed before writing leaves the
// earlier result in place).
bool written_after(const std::string& log, const std::string& result) {
  std::error_code a, b;
  const auto log_time = fs::last_write_time(log, a), result_time = fs::last_write_time(result, b);
  return !a && !b && log_time > result_time;
}

// Under --point, the points another array task runs: as their result files stand when this task
// writes, so that a task's state file shows the sweep, not that task alone. A result of another
// spec than its point asks for now (the base spec edited before a re-submit) is no point of this
// sweep yet: pending, as --resume would redo it. A point that ended without a result of its spec
// (bad input, a crash) is failed, or interrupted, as its log's end line says.
void take_unselected_points_from_disk(SweepPlan& plan, int only_point) {
  if (only_point < 0) return;
  for (auto& p : plan.points) {
    if (p.index == only_point) continue;
    p.status = "pending";
    p.reason.clear();
    p.exit_code = -1;
    const std::string log = log_path_of(plan, p);
    std::optional<LoggedEnd> end = read_end_line(log);
    const bool has_result = fs::exists(p.result_path);
    if (!end && !has_result) continue;  // not run yet
    const std::optional<json> asked = spec_asked_now(plan, p);  // read once: both checks below compare with it
    if (end && (end->status == "completed" || !asked || end->spec_hash != stable_hash_hex(asked->dump()))) end.reset();
    // A failure logged after the result was written is the point's news; else its result is.
    if (has_result && !(end && written_after(log, p.result_path))) {
      const EarlierResult earlier = read_earlier_result(p.result_path);
      const bool finished =
          earlier.status == "completed" || earlier.status == "failed" || earlier.status == "interrupted";
      if (finished && asked && spec_changes(*asked, earlier.spec).empty()) {
        p.status = earlier.status;
        if (p.status == "failed") p.reason = failure_reason(p, log);
        continue;
      }
    }
    if (!end || (end->status != "failed" && end->status != "interrupted")) continue;
    p.exit_code = end->exit_code;
    p.status = end->status;
    if (p.status == "failed") p.reason = failure_reason_in_log(p, log);
  }
}

int run_point(const SweepPlan& plan, const SweepPoint& p, const SweepOptions& options, const std::string& log_path) {
  std::vector<std::string> args = {options.binary, "run"};
  if (!plan.spec_path.empty()) args.push_back(plan.spec_path);
  for (const auto& o : p.overrides) {
    args.push_back("--set");
    args.push_back(o);
  }
  args.push_back("--force");  // the sweep decided this point runs (see run_sweep)
  args.push_back("--quiet");
  const pid_t sweep = ::getpid();
  const pid_t child = fork();
  if (child < 0) throw Error(ExitCode::internal, "fork failed");
  if (child == 0) {
    ::setpgid(0, 0);  // out of the terminal's foreground group: the sweep passes signals on
    // A sweep killed outright (SIGKILL, a scheduler's time limit) takes its point with it: the point
    // is interrupted (SIGTERM), writes what it measured, and `--resume` redoes it. Without this it
    // would run on as an orphan, into the folder a resumed sweep writes.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != sweep) _exit(130);  // the sweep died before prctl took effect
    const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDERR_FILENO);
      dup2(fd, STDOUT_FILENO);
      close(fd);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  g_running_child = child;
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  g_running_child = 0;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

void write_state(SweepPlan& plan, int only_point) {
  take_unselected_points_from_disk(plan, only_point);
  write_file_atomically(state_path(plan), json_text(sweep_state(plan), 2) + "\n");
}

// Before any point runs: a folder the sweep cannot write in would fail each point's run and then
// the state file, after the work.
void write_the_first_state(SweepPlan& plan, int only_point) {
  try {
    write_state(plan, only_point);
  } catch (const Error& e) {
    throw input_error("--out-dir: cannot write the sweep's files in '" + plan.out_dir + "': " + e.what());
  }
}

}  // namespace

SweepAxis parse_grid_option(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw input_error("--grid " + text + ": expected key=value1,value2,... (e.g. --grid precision=fp16,fp32)");
  }
  SweepAxis axis;
  axis.key = text.substr(0, eq);
  // A last empty value too: "8,16," is refused like "8,,16".
  axis.values = split(text.substr(eq + 1), ',');
  if (std::find(axis.values.begin(), axis.values.end(), "") != axis.values.end()) {
    throw input_error("--grid " + text + ": empty value");
  }
  return axis;
}

SweepPlan plan_sweep(const std::string& spec_path, const std::vector<std::string>& overrides,
                     const std::vector<std::string>& grid_options, int repeat, const std::string& out_dir) {
  SpecDocument doc = spec_path.empty() ? default_spec_document() : read_spec_file(spec_path);
  apply_overrides(doc, overrides);
  SweepPlan plan;
  plan.spec_path = spec_path;
  plan.base_overrides = overrides;
  const json sweep = doc.root.value("sweep", json::object());
  if (!sweep.is_object()) throw input_error(doc.where("sweep") + ": sweep: expected a section (a mapping)");
  if (sweep.contains("grid")) {
    if (!sweep["grid"].is_object()) throw input_error(doc.where("sweep.grid") + ": sweep.grid: expected {field: [values]}");
    for (const auto& item : sweep["grid"].items()) {
      if (!item.value().is_array() || item.value().empty()) {
        throw input_error(doc.where("sweep.grid." + item.key()) + ": sweep.grid." + item.key() +
                          ": expected a non-empty list of values");
      }
      SweepAxis axis{item.key(), {}};
      for (const auto& v : item.value()) axis.values.push_back(scalar_text(v));
      plan.axes.push_back(axis);
    }
  }
  std::set<std::string> command_line_keys;
  for (const auto& option : grid_options) {
    SweepAxis axis = parse_grid_option(option);
    if (!command_line_keys.insert(axis.key).second) {
      throw input_error("--grid " + option + ": " + axis.key + " is already an axis: give its values in one --grid");
    }
    auto same = std::find_if(plan.axes.begin(), plan.axes.end(), [&](const SweepAxis& a) { return a.key == axis.key; });
    if (same != plan.axes.end()) {
      *same = axis;  // the command line's axis replaces the spec's
    } else {
      plan.axes.push_back(axis);
    }
  }
  for (const auto& axis : plan.axes) {
    const bool from_command_line = command_line_keys.count(axis.key) > 0;
    const std::string where =
        from_command_line ? "--grid " + axis.key : doc.where("sweep.grid." + axis.key) + ": sweep.grid." + axis.key;
    refuse_a_field_the_sweep_sets(axis.key, where, true);
  }
  for (const auto& o : overrides) refuse_a_field_the_sweep_sets(override_key(o), "--set " + o, false);
  if (sweep.contains("repeat") && !(sweep["repeat"].is_number_integer() && sweep["repeat"].get<int64_t>() >= 1 &&
                                    sweep["repeat"].get<int64_t>() <= kMaxSweepPoints)) {
    throw input_error(doc.where("sweep.repeat") + ": sweep.repeat: expected an integer from 1 to " + std::to_string(kMaxSweepPoints) + ", got " + json_text(sweep["repeat"]));
  }
  plan.repeat = repeat > 0 ? repeat : static_cast<int>(sweep.value("repeat", int64_t{1}));
  const std::string name = base_name(doc, spec_path);
  plan.out_dir = !out_dir.empty() ? out_dir
                 : sweep.contains("out_dir") && sweep["out_dir"].is_string()
                     ? sweep["out_dir"].get<std::string>()
                     : "results/sweep-" + file_safe(name);
  refuse_a_placeholder_in_the_folder(plan.out_dir,
                                     !out_dir.empty() ? "--out-dir" : doc.where("sweep.out_dir") + ": sweep.out_dir");
  refuse_too_many_points(plan);
  build_points(plan, name);
  refuse_points_sharing_a_result(plan);
  return plan;
}

json sweep_state(const SweepPlan& plan) {
  json points = json::array();
  for (const auto& p : plan.points) {
    points.push_back({{"index", p.index}, {"id", p.id}, {"overrides", p.overrides}, {"result", p.result_path},
                      {"status", p.status}, {"reason", p.reason.empty() ? json(nullptr) : json(p.reason)},
                      {"exit_code", p.exit_code}});
  }
  json axes = json::object();
  for (const auto& a : plan.axes) axes[a.key] = a.values;
  return {{"schema", kSweepStateSchemaId}, {"spec", plan.spec_path.empty() ? json(nullptr) : json(plan.spec_path)},
          {"grid", axes}, {"repeat", plan.repeat}, {"out_dir", plan.out_dir}, {"points", points}};
}

void check_point_index(const SweepPlan& plan, int point) {
  if (point < static_cast<int>(plan.points.size())) return;
  throw input_error("--point: " + std::to_string(point) + " is out of range (the sweep has " +
                    std::to_string(plan.points.size()) + " points, 0.." + std::to_string(plan.points.size() - 1) + ")");
}

ExitCode run_sweep(SweepPlan& plan, const SweepOptions& options) {
  std::error_code ec;
  fs::create_directories(plan.out_dir, ec);
  if (ec) throw input_error("--out-dir: cannot create '" + plan.out_dir + "': " + ec.message());
  check_point_index(plan, options.only_point);
  refuse_outputs_onto_inputs(plan);
  // Decide up front which points run, so a refusal happens before any work.
  for (auto& p : plan.points) {
    if (options.only_point >= 0 && p.index != options.only_point) continue;
    if (!fs::exists(p.result_path)) continue;
    const EarlierResult earlier = read_earlier_result(p.result_path);
    if (options.resume && earlier.status == "completed") {
      refuse_a_point_run_with_another_spec(plan, p, earlier);
      // A result the table cannot read (cut short, edited) is no finished point: run it again.
      const std::string unusable = why_unusable(p.result_path);
      if (unusable.empty()) {
        p.status = "skipped";
      } else {
        spdlog::warn("point {}: its result cannot be read, so it runs again: {}", p.id, unusable);
      }
    } else if (!options.resume && !options.force) {
      throw Error(ExitCode::result_exists, p.result_path + ": exists (status " + earlier.status +
                                               "); pass --resume to skip completed points or --force to redo them");
    }
  }

  write_the_first_state(plan, options.only_point);
  warn_of_results_of_no_point(plan);

  g_sweep_interrupted = 0;
  auto previous_int = std::signal(SIGINT, on_sweep_signal);
  auto previous_term = std::signal(SIGTERM, on_sweep_signal);
  ExitCode code = ExitCode::ok;
  int done = 0;
  // Under --point, the others stand as their files do (another task may run them): not this call's.
  const auto runs_now = [&](const SweepPoint& p) {
    return p.status == "pending" && (options.only_point < 0 || p.index == options.only_point);
  };
  const auto total = std::count_if(plan.points.begin(), plan.points.end(), runs_now);
  for (auto& p : plan.points) {
    if (!runs_now(p)) continue;
    if (g_sweep_interrupted) break;
    ++done;
    spdlog::info("sweep point {}/{}: {}", done, total, p.id);
    const std::string log_path = log_path_of(plan, p);
    const FileIdentity before = file_identity(p.result_path);
    // The spec as the point runs it: the base file may be edited while it runs.
    const std::string spec_hash = point_spec_hash(plan, p);
    p.exit_code = run_point(plan, p, options, log_path);
    if (p.exit_code == 0) {
      p.status = "completed";
    } else if (p.exit_code == static_cast<int>(ExitCode::interrupted) || g_sweep_interrupted) {
      // A Ctrl-C after the point's last step still leaves its result whole: it counts, and the
      // sweep stops there. A run that wrote nothing (killed) leaves an earlier --force'd result in
      // place, which is not this run's.
      const bool whole = file_identity(p.result_path) != before &&
                         read_earlier_result(p.result_path).status == "completed";
      p.status = whole ? "completed" : "interrupted";
      g_sweep_interrupted = 1;
    } else {
      p.status = "failed";
      // A point that failed before writing leaves an earlier --force'd result, which is not this run's.
      p.reason = file_identity(p.result_path) != before ? failure_reason(p, log_path) : failure_reason_in_log(p, log_path);
      code = ExitCode::run_failed;
      spdlog::warn("point {} failed: {}", p.id, p.reason);
    }
    append_end_line(log_path, p, spec_hash);
    write_state(plan, options.only_point);
  }
  std::signal(SIGINT, previous_int);
  std::signal(SIGTERM, previous_term);
  write_state(plan, options.only_point);
  if (g_sweep_interrupted) {
    spdlog::warn("sweep interrupted; `--resume` continues where it stopped");
    return ExitCode::interrupted;
  }
  return code;
}

}  // namespace tbench
