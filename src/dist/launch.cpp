// Which launcher started this process, and where rank 0 is: read from the environment only.
// Nothing here talks to the network, so `tbench validate` runs the same checks as `tbench run`.
#include <cstdlib>
#include <map>

#include "tbench/dist/dist.hpp"
#include "tbench/errors.hpp"
#include "tbench/text.hpp"

namespace tbench {
namespace {

constexpr int kDefaultMasterPort = 29500;

class Env {
 public:
  explicit Env(const EnvLookup& lookup) : lookup_(lookup) {}

  std::optional<std::string> get(const std::string& name) const {
    auto value = lookup_(name);
    if (value && value->empty()) return std::nullopt;
    return value;
  }
  bool has(const std::string& name) const { return get(name).has_value(); }

  // A non-negative integer, or a bad-input error naming the variable.
  int integer(const std::string& name, int minimum = 0) const {
    const std::string text = *get(name);
    std::size_t used = 0;
    long value = -1;
    try {
      value = std::stol(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || value < minimum || value > 1 << 24) {
      throw input_error("launch environment: " + name + "='" + text + "' is not an integer >= " +
                        std::to_string(minimum));
    }
    return static_cast<int>(value);
  }
  std::optional<int> optional_integer(const std::string& name, int minimum = 0) const {
    return has(name) ? std::optional<int>(integer(name, minimum)) : std::nullopt;
  }

 private:
  const EnvLookup& lookup_;
};

// Every name in `required` must be set when any name in `present_any` is.
void require_all(const Env& env, const std::string& launcher, const std::vector<std::string>& set_names,
                 const std::vector<std::string>& required) {
  std::vector<std::string> missing;
  for (const auto& name : required) {
    if (!env.has(name)) missing.push_back(name);
  }
  if (missing.empty()) return;
  std::vector<std::string> present;
  for (const auto& name : set_names) {
    if (env.has(name)) present.push_back(name);
  }
  throw input_error("launch environment: " + join_as_prose(present) + (present.size() == 1 ? " is" : " are") +
                    " set (a " + launcher + " launch) but " + join_as_prose(missing) +
                    (missing.size() == 1 ? " is" : " are") + " not; set " + join_as_prose(required) + ", or unset " +
                    join_as_prose(present) + " for a single-process run");
}

void check_rank(const LaunchEnv& env, const std::string& rank_name, const std::string& size_name) {
  if (env.rank >= env.world_size) {
    throw input_error("launch environment: " + rank_name + "=" + std::to_string(env.rank) + " is not below " +
                      size_name + "=" + std::to_string(env.world_size));
  }
}

void set_master(LaunchEnv& launch, const Env& env, const std::string& addr, const std::string& addr_source) {
  launch.master_addr = addr;
  launch.master_port = env.has("MASTER_PORT") ? env.integer("MASTER_PORT", 1) : kDefaultMasterPort;
  if (launch.master_port > 65535) {
    throw input_error("launch environment: MASTER_PORT=" + std::to_string(launch.master_port) + " is not a TCP port");
  }
  if (launch.distributed() && launch.master_addr.empty()) {
    throw input_error("launch environment: " + std::to_string(launch.world_size) +
                      " processes, but MASTER_ADDR is not set (" + addr_source +
                      "); export MASTER_ADDR=<rank 0's host or IP>");
  }
}

LaunchEnv torchrun_env(const Env& env) {
  const std::vector<std::string> names = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"};
  require_all(env, "torchrun-style", names, {"RANK", "WORLD_SIZE"});
  LaunchEnv launch;
  launch.launcher = Launcher::torchrun;
  launch.world_size = env.integer("WORLD_SIZE", 1);
  launch.rank = env.integer("RANK");
  check_rank(launch, "RANK", "WORLD_SIZE");
  launch.local_world_size = env.optional_integer("LOCAL_WORLD_SIZE", 1).value_or(0);
  // Unset (a hand-made environment): ranks fill each node in turn, as torchrun numbers them, so a
  // node of LOCAL_WORLD_SIZE processes holds RANK % LOCAL_WORLD_SIZE; without it, one node.
  launch.local_rank = env.optional_integer("LOCAL_RANK")
                          .value_or(launch.local_world_size > 0 ? launch.rank % launch.local_world_size : launch.rank);
  if (launch.distributed()) require_all(env, "torchrun-style", names, {"MASTER_ADDR", "MASTER_PORT"});
  set_master(launch, env, env.get("MASTER_ADDR").value_or(""), "torchrun sets it");
  if (env.get("TORCHELASTIC_USE_AGENT_STORE").value_or("") == "True") {
    launch.agent_store = true;
    launch.store_prefix = "/worker/attempt_" + env.get("TORCHELASTIC_RESTART_COUNT").value_or("0");
  }
  return launch;
}

LaunchEnv slurm_env(const Env& env) {
  const std::vector<std::string> names = {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"};
  require_all(env, "srun", names, {"SLURM_PROCID", "SLURM_NTASKS"});
  LaunchEnv launch;
  launch.launcher = Launcher::slurm;
  launch.world_size = env.integer("SLURM_NTASKS", 1);
  launch.rank = env.integer("SLURM_PROCID");
  check_rank(launch, "SLURM_PROCID", "SLURM_NTASKS");
  launch.local_rank = env.optional_integer("SLURM_LOCALID").value_or(0);
  // The step's tasks on each of its nodes (srun sets it; SLURM_NTASKS_PER_NODE only comes with
  // --ntasks-per-node): "2(x3),1", read at this task's node, SLURM_NODEID.
  for (const char* name : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE"}) {
    if (const auto per_node = env.get(name)) {
      launch.local_world_size = tasks_on_node(*per_node, env.optional_integer("SLURM_NODEID").value_or(0));
      if (launch.local_world_size > 0) break;
    }
  }
  launch.cpus_per_task = env.optional_integer("SLURM_CPUS_PER_TASK", 1).value_or(0);
  // Task 0 runs on the step's first node. srun's own host (SLURM_LAUNCH_NODE_IPADDR) is that node
  // in a batch script, but a login node when srun runs from salloc there: it comes last.
  std::string addr = env.get("MASTER_ADDR").value_or("");
  for (const char* nodelist : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"}) {
    if (addr.empty() && env.has(nodelist)) addr = first_host_of_nodelist(*env.get(nodelist));
  }
  if (addr.empty()) addr = env.get("SLURM_LAUNCH_NODE_IPADDR").value_or("");
  set_master(launch, env, addr, "nor SLURM_STEP_NODELIST, SLURM_JOB_NODELIST or SLURM_LAUNCH_NODE_IPADDR");
  return launch;
}

LaunchEnv mpi_env(const Env& env) {
  const std::vector<std::string> names = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"};
  require_all(env, "Open MPI", names, {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"});
  LaunchEnv launch;
  launch.launcher = Launcher::mpi;
  launch.world_size = env.integer("OMPI_COMM_WORLD_SIZE", 1);
  launch.rank = env.integer("OMPI_COMM_WORLD_RANK");
  check_rank(launch, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
  launch.local_rank = env.optional_integer("OMPI_COMM_WORLD_LOCAL_RANK").value_or(0);
  launch.local_world_size = env.optional_integer("OMPI_COMM_WORLD_LOCAL_SIZE", 1).value_or(0);
  // Every rank on this node: rank 0 is here too, and the loopback address reaches it.
  std::string addr = env.get("MASTER_ADDR").value_or("");
  if (addr.empty() && launch.local_world_size == launch.world_size) addr = "127.0.0.1";
  set_master(launch, env, addr, "mpirun -x MASTER_ADDR=<host of rank 0> passes it");
  return launch;
}

}  // namespace

const char* to_string(Launcher launcher) {
  switch (launcher) {
    case Launcher::none: return "none";
    case Launcher::torchrun: return "torchrun";
    case Launcher::slurm: return "slurm";
    case Launcher::mpi: return "mpi";
  }
  return "?";
}

LaunchEnv detect_launch(const EnvLookup& lookup) {
  const Env env(lookup);
  if (env.has("RANK") || env.has("WORLD_SIZE")) return torchrun_env(env);
  // mpirun inside a SLURM allocation starts its daemons with srun, and its ranks inherit their
  // SLURM_* (SLURM_PROCID the node's index): Open MPI's own variables come first.
  if (env.has("OMPI_COMM_WORLD_RANK") || env.has("OMPI_COMM_WORLD_SIZE")) return mpi_env(env);
  // SLURM_PROCID alone is not enough: a batch script has SLURM_* too. Only srun's job steps count.
  if ((env.has("SLURM_PROCID") || env.has("SLURM_NTASKS")) && (env.has("SLURM_STEP_ID") || env.has("SLURM_STEPID"))) {
    return slurm_env(env);
  }
  return {};
}

LaunchEnv detect_launch() {
  return detect_launch([](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    return value ? std::optional<std::string>(value) : std::nullopt;
  });
}

std::string first_host_of_nodelist(const std::string& nodelist) {
  // Up to the first comma outside brackets; a bracket range expands to its first number.
  std::string host;
  for (std::size_t i = 0; i < nodelist.size(); ++i) {
    const char c = nodelist[i];
    if (c == ',') break;
    if (c == '[') {
      std::size_t j = i + 1;
      while (j < nodelist.size() && nodelist[j] != '-' && nodelist[j] != ',' && nodelist[j] != ']') host += nodelist[j++];
      const auto close = nodelist.find(']', i);
      if (close == std::string::npos) break;
      i = close;
      continue;
    }
    host += c;
  }
  return host;
}

int tasks_on_node(const std::string& tasks_per_node, int node) {
  // Comma-separated counts, each "N" or "N(xK)" for K nodes in a row.
  int first_node = 0;
  for (const std::string& item : split(tasks_per_node, ',')) {
    const int tasks = std::atoi(item.c_str());
    int nodes = 1;
    if (const auto times = item.find("(x"); times != std::string::npos) nodes = std::atoi(item.c_str() + times + 2);
    if (tasks <= 0 || nodes <= 0) return 0;
    if (node < first_node + nodes) return tasks;
    first_node += nodes;
  }
  return 0;
}

int threads_per_process(const LaunchEnv& env, int usable_cores) {
  if (env.cpus_per_task > 0) return env.cpus_per_task;  // srun --cpus-per-task gave each task its share
  if (!env.distributed() || env.local_world_size <= 1) return usable_cores;
  return std::max(1, usable_cores / env.local_world_size);
}

int rank_device_index(const LaunchEnv& env, int64_t visible_devices) {
  // One device per task (srun --gpus-per-task, --gpu-bind): each task sees its own GPU as cuda:0.
  if (visible_devices == 1 && env.local_world_size > 1) return 0;
  return env.local_rank;
}

std::vector<std::string> available_backends() {
  std::vector<std::string> backends;
#if TBENCH_WITH_GLOO
  backends.push_back("gloo");
#endif
#if TBENCH_WITH_NCCL
  backends.push_back("nccl");
#endif
  return backends;
}

LaunchEnv group_as_the_spec_asks(LaunchEnv env, const RunSpec& spec) {
  if (!spec.dist.group_at_world_size_1 || env.launcher == Launcher::none || env.world_size != 1) return env;
  if (env.master_addr.empty() && !env.agent_store) {
    throw input_error(spec.where("dist.group_at_world_size_1") + "a process group of one needs its store's address, "
                      "but MASTER_ADDR is not set; export MASTER_ADDR=127.0.0.1");
  }
  env.group_alone = true;
  return env;
}

void check_launch(const RunSpec& spec, const LaunchEnv& env) {
  if (!env.distributed()) return;
  const std::string who = std::string(to_string(env.launcher)) + " launch of " + std::to_string(env.world_size) +
                          (env.world_size == 1 ? " process" : " processes");
  if (spec.train.cuda_graph == true) {  // unset, it resolves to false here (runner.cpp)
    throw input_error(spec.where("train.cuda_graph") + "a " + who +
                      " cannot capture its step: the gradient all-reduces start from autograd hooks on the "
                      "host; set train.cuda_graph to false for data-parallel runs");
  }
  const bool cuda = spec.device.is_cuda();
  const std::string backend = cuda ? "nccl" : "gloo";
  const auto backends = available_backends();
  if (std::find(backends.begin(), backends.end(), backend) == backends.end()) {
    throw input_error(spec.where("device") + who + " on " + spec.device.text() + " needs the " + backend +
                      " backend, which this build does not have (" +
                      (cuda ? "ProcessGroupNCCL needs a CUDA LibTorch and nccl.h at configure time"
                            : "Gloo's headers were not found at configure time; install libgloo-dev and reconfigure") +
                      ")");
  }
  if (cuda) {
    const int64_t count = static_cast<int64_t>(torch::cuda::device_count());
    const int index = rank_device_index(env, count);
    if (index >= count) {
      throw input_error("launch environment: local rank " + std::to_string(env.local_rank) + " needs cuda:" +
                        std::to_string(index) + ", but this process sees " + std::to_string(count) +
                        " CUDA device(s); start at most one process per GPU");
    }
  }
}

bool is_loopback_address(const std::string& address) {
  return address == "localhost" || address == "::1" || address.rfind("127.", 0) == 0;
}

GlooBinding choose_gloo_binding(const LaunchEnv& env, const std::string& route_to_master,
                                const std::vector<std::string>& host_addresses) {
  if (is_loopback_address(env.master_addr)) return {"127.0.0.1", ""};
  if (!is_loopback_address(route_to_master)) return {route_to_master, ""};
  const std::string resolves = "this host reaches MASTER_ADDR " + env.master_addr + " over loopback (from " +
                               route_to_master + "; its /etc/hosts maps the name to a loopback address, as Debian's "
                               "127.0.1.1 line does)";
  const bool spans_hosts = env.local_world_size > 0 && env.local_world_size < env.world_size;
  if (!spans_hosts) {
    if (env.local_world_size > 0) return {route_to_master, ""};  // every rank is here
    return {route_to_master, resolves + ": Gloo binds it, which ranks on other hosts cannot reach; if there are any, "
                                        "set GLOO_SOCKET_IFNAME, or MASTER_ADDR to an address they reach"};
  }
  if (host_addresses.empty()) {
    return {route_to_master, resolves + ", which ranks on other hosts cannot reach, and this host has no other "
                                        "address: set GLOO_SOCKET_IFNAME"};
  }
  return {host_addresses.front(), resolves + ", which ranks on other hosts cannot reach: Gloo binds " +
                                      host_addresses.front() +
                                      ", this host's first other address (set GLOO_SOCKET_IFNAME to choose)"};
}

torch::Device rank_device(const RunSpec& spec, const LaunchEnv& env) {
  if (env.distributed() && spec.device.is_cuda()) {
    const int index = rank_device_index(env, static_cast<int64_t>(torch::cuda::device_count()));
    return torch::Device(torch::kCUDA, static_cast<torch::DeviceIndex>(index));
  }
  return torch::Device(spec.device.text());
}

}  // namespace tbench
