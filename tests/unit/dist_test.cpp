// Data parallelism without processes: the launch environment, data sharding, step plans and the
// scaling report on hand-made results.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <sched.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <map>
#include <thread>

#include "support/cli.hpp"
#include "support/expect_error.hpp"
#include "support/ranks.hpp"
#include "tbench/analysis/analysis.hpp"
#include "tbench/data/data.hpp"
#include "tbench/dist/dist.hpp"
#include "tbench/dist/failure_watch.hpp"
#include "tbench/dist/tcp_store.hpp"
#include "tbench/errors.hpp"
#include "tbench/env/env.hpp"
#include "tbench/results/result.hpp"
#include "tbench/run/runner.hpp"
#include "tbench/timing/clock.hpp"

namespace tbench {
namespace {

using nlohmann::json;

LaunchEnv launch_from(const std::map<std::string, std::string>& vars) {
  return detect_launch([&](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
}

// The bad-input message for `vars`, or "" if they are accepted.
std::string launch_error(const std::map<std::string, std::string>& vars) {
  try {
    launch_from(vars);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    return e.what();
  }
  return "";
}

TEST(Launch, NoLauncherIsASingleProcess) {
  const LaunchEnv env = launch_from({{"HOME", "/root"}, {"SLURM_JOB_ID", "7"}});
  EXPECT_EQ(env.launcher, Launcher::none);
  EXPECT_EQ(env.world_size, 1);
  EXPECT_FALSE(env.distributed());
}

TEST(Launch, Torchrun) {
  const LaunchEnv env = launch_from({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
                                     {"MASTER_ADDR", "node1"}, {"MASTER_PORT", "1234"}});
  EXPECT_EQ(env.launcher, Launcher::torchrun);
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.world_size, 8);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 2);
  EXPECT_EQ(env.master_addr, "node1");
  EXPECT_EQ(env.master_port, 1234);
  EXPECT_TRUE(env.distributed());
  EXPECT_FALSE(env.agent_store);
  // torchrun's static rendezvous: its agent hosts the store, rank 0 joins it like the others.
  const LaunchEnv agent = launch_from({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"},
                                       {"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"TORCHELASTIC_RESTART_COUNT", "2"}});
  EXPECT_TRUE(agent.agent_store);
  EXPECT_EQ(agent.store_prefix, "/worker/attempt_2");
  // torchrun --nproc-per-node=1: a launcher, one process, the single-process path.
  EXPECT_FALSE(launch_from({{"RANK", "0"}, {"WORLD_SIZE", "1"}}).distributed());
}

TEST(Launch, HalfSetEnvironmentsNameTheMissingVariables) {
  EXPECT_NE(launch_error({{"RANK", "0"}}).find("WORLD_SIZE is not"), std::string::npos);
  EXPECT_NE(launch_error({{"WORLD_SIZE", "4"}}).find("RANK is not"), std::string::npos);
  const std::string no_master = launch_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}});
  EXPECT_NE(no_master.find("MASTER_ADDR and MASTER_PORT are not"), std::string::npos) << no_master;
  EXPECT_NE(launch_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}).find("MASTER_PORT is not"),
            std::string::npos);
  EXPECT_NE(launch_error({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}})
                .find("RANK=2 is not below WORLD_SIZE=2"),
            std::string::npos);
  EXPECT_NE(launch_error({{"RANK", "one"}, {"WORLD_SIZE", "2"}}).find("RANK='one'"), std::string::npos);
  EXPECT_NE(launch_error({{"RANK", "0"}, {"WORLD_SIZE", "0"}}).find("WORLD_SIZE='0'"), std::string::npos);
  EXPECT_NE(launch_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}})
                .find("MASTER_PORT=70000"),
            std::string::npos);
}

TEST(Launch, SlurmStepsFindRankZerosHost) {
  const std::map<std::string, std::string> step = {{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"},
                                                   {"SLURM_STEP_ID", "0"}, {"SLURM_JOB_NODELIST", "gpu[07-10],cpu1"}};
  LaunchEnv env = launch_from(step);
  EXPECT_EQ(env.launcher, Launcher::slurm);
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.world_size, 8);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.master_addr, "gpu07");
  EXPECT_EQ(env.master_port, 29500);
  // srun's own host comes after the node lists: from salloc on a login node it is not task 0's.
  auto with_ip = step;
  with_ip["SLURM_LAUNCH_NODE_IPADDR"] = "10.0.0.7";
  EXPECT_EQ(launch_from(with_ip).master_addr, "gpu07");
  with_ip["SLURM_STEP_NODELIST"] = "gpu[09-10]";  // a step on part of the allocation
  EXPECT_EQ(launch_from(with_ip).master_addr, "gpu09");
  with_ip.erase("SLURM_STEP_NODELIST");
  with_ip.erase("SLURM_JOB_NODELIST");
  EXPECT_EQ(launch_from(with_ip).master_addr, "10.0.0.7");
  with_ip["MASTER_ADDR"] = "head";
  with_ip["MASTER_PORT"] = "4000";
  env = launch_from(with_ip);
  EXPECT_EQ(env.master_addr, "head");
  EXPECT_EQ(env.master_port, 4000);
  // A batch script (no job step) is not a launch: srun makes the ranks.
  EXPECT_EQ(launch_from({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}}).launcher, Launcher::none);
  EXPECT_NE(launch_error({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "3"}}).find("SLURM_NTASKS is not"), std::string::npos);
  EXPECT_NE(launch_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_STEP_ID", "3"}}).find("MASTER_ADDR"),
            std::string::npos);
}

TEST(Launch, OpenMpi) {
  LaunchEnv env = launch_from({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                               {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(env.launcher, Launcher::mpi);
  EXPECT_EQ(env.rank, 1);
  EXPECT_EQ(env.master_addr, "127.0.0.1");  // every rank on this node
  EXPECT_NE(launch_error({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                          {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}})
                .find("MASTER_ADDR is not set"),
            std::string::npos);
}

// mpirun in a SLURM allocation starts its daemons with srun; each rank inherits the daemon's
// SLURM_PROCID (the node's index) and SLURM_STEP_ID. Open MPI's own variables name the rank.
TEST(Launch, OpenMpiInsideASlurmAllocationIsOpenMpi) {
  LaunchEnv env = launch_from({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                               {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                               {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_STEP_ID", "0"},
                               {"SLURM_JOB_NODELIST", "n[1-2]"}, {"MASTER_ADDR", "n1"}});
  EXPECT_EQ(env.launcher, Launcher::mpi);
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.world_size, 4);
  EXPECT_EQ(env.local_rank, 1);
}

TEST(Launch, FirstHostOfANodeList) {
  EXPECT_EQ(first_host_of_nodelist("node17"), "node17");
  EXPECT_EQ(first_host_of_nodelist("node[01-04,07],gpu5"), "node01");
  EXPECT_EQ(first_host_of_nodelist("a,b"), "a");
  EXPECT_EQ(first_host_of_nodelist("rack1-n[3,5]"), "rack1-n3");
  EXPECT_EQ(first_host_of_nodelist("gpu[7-9]-ib"), "gpu7-ib");
}

// A hand-made torchrun-style environment without LOCAL_RANK took RANK for it: rank 5 of two
// 4-process nodes asked for cuda:5 (found by review). With LOCAL_WORLD_SIZE, RANK % it.
TEST(Launch, WithoutLocalRankTheNodesSizeGivesIt) {
  const std::map<std::string, std::string> env = {{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_WORLD_SIZE", "4"},
                                                  {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}};
  EXPECT_EQ(launch_from(env).local_rank, 1);
  auto one_node = env;
  one_node.erase("LOCAL_WORLD_SIZE");
  EXPECT_EQ(launch_from(one_node).local_rank, 5);
  auto given = env;
  given["LOCAL_RANK"] = "3";
  EXPECT_EQ(launch_from(given).local_rank, 3);
}

TEST(Launch, ThreadsAreSharedAmongTheProcessesOfANode) {
  LaunchEnv env = launch_from({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"},
                               {"MASTER_PORT", "1"}});
  EXPECT_EQ(threads_per_process(env, 16), 8);
  EXPECT_EQ(threads_per_process(env, 1), 1);
  EXPECT_EQ(threads_per_process(LaunchEnv{}, 16), 16);
}

// Plain `srun -n 4` over two nodes sets no SLURM_NTASKS_PER_NODE: every task took every core
// (found by review). srun's SLURM_STEP_TASKS_PER_NODE, read at the task's node, says how many
// share it; --cpus-per-task says each task's share outright.
TEST(Launch, SrunTasksShareTheirNodesCores) {
  EXPECT_EQ(tasks_on_node("2(x3),1", 0), 2);
  EXPECT_EQ(tasks_on_node("2(x3),1", 2), 2);
  EXPECT_EQ(tasks_on_node("2(x3),1", 3), 1);
  EXPECT_EQ(tasks_on_node("4", 0), 4);
  EXPECT_EQ(tasks_on_node("3,1", 1), 1);
  EXPECT_EQ(tasks_on_node("3,1", 2), 0);    // no such node
  EXPECT_EQ(tasks_on_node("x(x2)", 0), 0);  // unreadable
  const std::map<std::string, std::string> step = {{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "0"},
                                                   {"SLURM_STEP_ID", "0"}, {"SLURM_JOB_NODELIST", "n[1-2]"},
                                                   {"SLURM_STEP_TASKS_PER_NODE", "3,1"}, {"SLURM_NODEID", "1"}};
  LaunchEnv env = launch_from(step);
  EXPECT_EQ(env.local_world_size, 1);
  EXPECT_EQ(threads_per_process(env, 16), 16);
  auto first_node = step;
  first_node["SLURM_NODEID"] = "0";
  EXPECT_EQ(threads_per_process(launch_from(first_node), 16), 5);
  first_node["SLURM_CPUS_PER_TASK"] = "4";
  EXPECT_EQ(threads_per_process(launch_from(first_node), 16), 4);
}

// Under `srun --gpus-per-task=1` each task sees its own GPU as cuda:0: local rank 1 asking for
// cuda:1 was refused (found by review). Where the node's GPUs are all visible, cuda:LOCAL_RANK.
TEST(Launch, ATaskThatSeesOneGpuOfItsOwnUsesCudaZero) {
  LaunchEnv env = launch_from({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
                               {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}});
  EXPECT_EQ(rank_device_index(env, 1), 0);
  EXPECT_EQ(rank_device_index(env, 2), 1);
  EXPECT_EQ(rank_device_index(env, 8), 1);
  env.local_world_size = 1;  // one process on this node: its local rank is its device
  EXPECT_EQ(rank_device_index(env, 1), 1);
}

TEST(Environment, UsableCoresFollowTheCpuAffinity) {
  cpu_set_t original;
  ASSERT_EQ(sched_getaffinity(0, sizeof original, &original), 0);
  EXPECT_GE(usable_cores(), 1);
  EXPECT_LE(usable_cores(), physical_cores());
  int first = -1;
  for (int cpu = 0; cpu < CPU_SETSIZE && first < 0; ++cpu) {
    if (CPU_ISSET(cpu, &original)) first = cpu;
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const int pinned = usable_cores();
  sched_setaffinity(0, sizeof original, &original);
  EXPECT_EQ(pinned, 1);
}

// A CPU launch needs Gloo: accepted where this build has it (Debian's libgloo-dev), refused with
// the reason where it does not (pip's torch ships no Gloo headers, so the GPU build has NCCL alone).
void expect_cpu_launch_accepted_where_gloo_is_built(const RunSpec& spec, const LaunchEnv& env) {
  if (testing::have_gloo()) {
    EXPECT_NO_THROW(check_launch(spec, env));
    return;
  }
  testing::expect_input_error([&] { check_launch(spec, env); }, {"needs the gloo backend"});
}

// Debian's /etc/hosts maps a host's own name to 127.0.1.1: on rank 0's host the route to
// MASTER_ADDR=its name is loopback, where ranks on other hosts cannot reach its Gloo device.
TEST(Launch, GlooBindsAnAddressTheOtherHostsReach) {
  LaunchEnv env;
  env.world_size = 4;
  env.local_world_size = 2;  // two hosts
  env.master_addr = "node1";
  const std::vector<std::string> addresses{"10.0.0.7", "fd00::7"};
  EXPECT_EQ(choose_gloo_binding(env, "10.0.0.7", addresses).address, "10.0.0.7");
  EXPECT_TRUE(choose_gloo_binding(env, "10.0.0.7", addresses).warning.empty());
  // The kernel's source address towards 127.0.1.1 is 127.0.0.1.
  const GlooBinding own_name = choose_gloo_binding(env, "127.0.0.1", addresses);
  EXPECT_EQ(own_name.address, "10.0.0.7");
  EXPECT_NE(own_name.warning.find("reaches MASTER_ADDR node1 over loopback (from 127.0.0.1"), std::string::npos)
      << own_name.warning;
  EXPECT_NE(own_name.warning.find("Gloo binds 10.0.0.7"), std::string::npos) << own_name.warning;
  const GlooBinding nothing_else = choose_gloo_binding(env, "127.0.1.1", {});
  EXPECT_EQ(nothing_else.address, "127.0.1.1");
  EXPECT_NE(nothing_else.warning.find("set GLOO_SOCKET_IFNAME"), std::string::npos) << nothing_else.warning;
  // Every rank on this host: its loopback route is the right one.
  env.local_world_size = 4;
  EXPECT_EQ(choose_gloo_binding(env, "127.0.1.1", addresses).address, "127.0.1.1");
  EXPECT_TRUE(choose_gloo_binding(env, "127.0.1.1", addresses).warning.empty());
  // A launcher that does not say: kept, with a warning.
  env.local_world_size = 0;
  EXPECT_EQ(choose_gloo_binding(env, "127.0.1.1", addresses).address, "127.0.1.1");
  EXPECT_FALSE(choose_gloo_binding(env, "127.0.1.1", addresses).warning.empty());
  // A loopback MASTER_ADDR binds loopback; no route found: Gloo's default device.
  env.master_addr = "127.0.0.1";
  EXPECT_EQ(choose_gloo_binding(env, "", addresses).address, "127.0.0.1");
  env.master_addr = "node1";
  EXPECT_EQ(choose_gloo_binding(env, "", addresses).address, "");
}

TEST(Launch, ChecksAgainstTheSpec) {
  SpecDocument doc = parse_spec_text(R"({"model": "tiny-bert", "data": {"num_samples": 24},
                                         "train": {"batch_size": 8}})",
                                     "s.json", false);
  const RunSpec spec = resolve_spec(doc);
  const LaunchEnv four = launch_from({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}});
  expect_cpu_launch_accepted_where_gloo_is_built(spec, four);
  try {
    check_samples_fill_a_step(spec, "data.num_samples", 24, 0, four.world_size);
    ADD_FAILURE() << "24 samples cannot make a global batch of 32";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("data.num_samples"), std::string::npos) << e.what();
  }
  const LaunchEnv two = launch_from({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}});
  expect_cpu_launch_accepted_where_gloo_is_built(spec, two);
  EXPECT_EQ(rank_device(spec, two), torch::Device(torch::kCPU));
  EXPECT_EQ(plan_steps(trainer_config(spec, LaunchEnv{}), 24, 2).steps_per_epoch, 1);
  EXPECT_EQ(plan_steps(trainer_config(spec, LaunchEnv{}), 24, 1).steps_per_epoch, 3);
}

// torchrun --nproc-per-node=1 runs the single-process path, unless the spec asks for a group of one
// (dist.group_at_world_size_1: the backend's overhead, measured). Without a launcher there is no group.
TEST(Launch, AGroupOfOneOnlyWhereTheSpecAsks) {
  SpecDocument doc = parse_spec_text(R"({"model": "tiny-bert", "dist": {"group_at_world_size_1": true}})", "s.json",
                                     false);
  const RunSpec asks = resolve_spec(doc);
  RunSpec does_not = asks;
  does_not.dist.group_at_world_size_1 = false;
  const LaunchEnv one = launch_from({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}});
  EXPECT_FALSE(one.distributed());
  EXPECT_FALSE(group_as_the_spec_asks(one, does_not).distributed());
  EXPECT_TRUE(group_as_the_spec_asks(one, asks).distributed());
  EXPECT_EQ(group_as_the_spec_asks(one, asks).world_size, 1);
  EXPECT_FALSE(group_as_the_spec_asks(launch_from({}), asks).distributed());
  const LaunchEnv two = launch_from({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}});
  EXPECT_FALSE(group_as_the_spec_asks(two, asks).group_alone) << "two processes are a group anyway";
  RunSpec captured = asks;
  captured.train.cuda_graph = true;  // a group of one all-reduces from autograd hooks too
  // A group of one cannot capture its step either; nor can it form without MASTER_ADDR.
  testing::expect_input_error([&] { check_launch(captured, group_as_the_spec_asks(one, asks)); },
                              {"torchrun launch of 1 process cannot capture"});
  testing::expect_input_error(
      [&] { group_as_the_spec_asks(launch_from({{"RANK", "0"}, {"WORLD_SIZE", "1"}}), asks); },
      {"dist.group_at_world_size_1", "MASTER_ADDR"});
}

TEST(Launch, RefusesACapturedStepDataParallel) {
  SpecDocument doc = parse_spec_text(R"({"model": "tiny-bert", "data": {"num_samples": 24},
                                         "train": {"batch_size": 8}})",
                                     "s.json", false);
  RunSpec spec = resolve_spec(doc);
  spec.train.cuda_graph = true;  // validation would refuse it on CPU first: the launch check is tested alone
  const LaunchEnv two = launch_from({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}});
  try {
    check_launch(spec, two);
    ADD_FAILURE() << "a captured step cannot start all-reduces from autograd hooks";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("train.cuda_graph"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_launch(spec, LaunchEnv{}));  // a single process may capture
}

TEST(StopRequests, WithoutLagTheNextReadSeesTheRequest) {
  StopRequests requests(0);
  EXPECT_FALSE(requests.agreed());
  requests.add(torch::zeros({1}));
  EXPECT_FALSE(requests.agreed());
  requests.add(torch::full({1}, 0.5));  // one rank of two asked: the mean is 0.5
  EXPECT_TRUE(requests.agreed());
  requests.add(torch::zeros({1}));
  EXPECT_TRUE(requests.agreed()) << "once agreed, a stop stays agreed";
}

TEST(StopRequests, ALagLeavesTheNewestUnreadAndWaitsForTheOthersToArrive) {
  StopRequests requests(1);
  std::vector<int> arrived;
  requests.add(torch::zeros({1}), [&] { arrived.push_back(1); });
  EXPECT_FALSE(requests.agreed());
  EXPECT_TRUE(arrived.empty()) << "the newest request is not waited for";
  requests.add(torch::ones({1}), [&] { arrived.push_back(2); });
  EXPECT_FALSE(requests.agreed()) << "the request is read one reduction later";
  EXPECT_EQ(arrived, (std::vector<int>{1}));
  requests.add(torch::zeros({1}), [&] { arrived.push_back(3); });
  EXPECT_TRUE(requests.agreed());
  EXPECT_EQ(arrived, (std::vector<int>{1, 2}));
  // The epoch's end reads the newest too.
  StopRequests at_the_end(1);
  at_the_end.add(torch::ones({1}), [&] { arrived.push_back(4); });
  EXPECT_FALSE(at_the_end.agreed());
  EXPECT_TRUE(at_the_end.read_all());
  EXPECT_EQ(arrived.back(), 4);
}

// Gloo ranks in this process, each joined from its own thread, with `timeout` as dist.timeout_s.
struct LocalRanks {
  explicit LocalRanks(int world_size, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    LaunchEnv env;
    env.launcher = Launcher::torchrun;
    env.world_size = world_size;
    env.master_addr = "127.0.0.1";
    env.master_port = testing::free_tcp_port();
    std::vector<std::future<std::unique_ptr<Communicator>>> others;
    for (int rank = 1; rank < world_size; ++rank) {
      others.push_back(std::async(std::launch::async, [env, rank, timeout]() mutable {
        env.rank = env.local_rank = rank;
        return Communicator::connect(env, torch::kCPU, timeout);
      }));
    }
    ranks.push_back(Communicator::connect(env, torch::kCPU, timeout));
    for (auto& other : others) ranks.push_back(other.get());
    port = env.master_port;
  }
  ~LocalRanks() {
    while (!ranks.empty()) ranks.pop_back();  // rank 0, which hosts the store, leaves last
    // connect() set the log's pattern and, for the other ranks, its level: the next test's are the defaults.
    spdlog::set_level(level_);
    spdlog::default_logger()->set_pattern("%+");
  }
  spdlog::level::level_enum level_ = spdlog::get_level();
  std::vector<std::unique_ptr<Communicator>> ranks;
  int port = 0;
};

// The host waits in slices of kFailureCheckInterval, looking for announced failures between them: a
// peer that comes late is no failure.
TEST(Communicator, AWaitLongerThanTheFailureCheckIntervalEndsWithTheSum) {
  if (!testing::have_gloo()) GTEST_SKIP() << "this build has no Gloo backend";
  LocalRanks two(2);
  auto mine = torch::ones({8});
  auto theirs = torch::full({8}, 2.0);
  auto late = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(3 * Communicator::kFailureCheckInterval);
    two.ranks[1]->allreduce_async(theirs);
    two.ranks[1]->wait_all();
  });
  two.ranks[0]->allreduce_async(mine);
  two.ranks[0]->wait_all();
  late.get();
  EXPECT_TRUE(torch::equal(mine, torch::full({8}, 3.0)));
  EXPECT_TRUE(torch::equal(theirs, torch::full({8}, 3.0)));
  EXPECT_FALSE(two.ranks[0]->announced_failure().has_value());
}

// A rank waiting in a collective its failed peer will never join stops at once with that peer's
// error, not at dist.timeout_s (20 s here) with a lost contact.
TEST(Communicator, AnAnnouncedFailureEndsAPeersWaitAtOnce) {
  if (!testing::have_gloo()) GTEST_SKIP() << "this build has no Gloo backend";
  LocalRanks two(2);
  auto mine = torch::ones({8});
  two.ranks[0]->allreduce_async(mine);
  auto failing = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    two.ranks[1]->announce_failure("its disk is full");
  });
  const auto start = std::chrono::steady_clock::now();
  std::string error;
  try {
    two.ranks[0]->wait_all();
  } catch (const PeerFailed& e) {
    error = e.what();
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  failing.get();
  EXPECT_EQ(error, "rank 0: stopped during a gradient all-reduce because rank 1 failed: its disk is full");
  EXPECT_LT(took, 5.0);
  const auto first = two.ranks[1]->announced_failure();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->rank, 1);
  // A failure a rank announces after it is no cause: the first one stays.
  two.ranks[0]->announce_failure("stopped too");
  EXPECT_EQ(two.ranks[0]->announced_failure()->error, "its disk is full");
  two.ranks[1].reset();  // it leaves first: rank 0's all-reduce then fails (its group is left behind)
}

// A rank announced in its own name by another (its watcher, which saw its heartbeat stand still
// while it was stopped or cut off) finds, once it waits again, that the others gave up on it:
// it stops too, instead of waiting for peers that have gone.
TEST(Communicator, ARankTheOthersGaveUpOnStopsAtItsNextWait) {
  if (!testing::have_gloo()) GTEST_SKIP() << "this build has no Gloo backend";
  LocalRanks two(2);
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(two.port);
  options.isServer = false;
  options.timeout = std::chrono::seconds(5);
  auto observer = open_tcp_store("127.0.0.1", options);
  write_failure(*observer, 0, silent_rank_error(1, std::chrono::seconds(15)));
  auto mine = torch::ones({8});
  two.ranks[0]->allreduce_async(mine);
  std::string error;
  try {
    two.ranks[0]->wait_all();
  } catch (const PeerFailed& e) {
    error = e.what();
  }
  EXPECT_EQ(error.rfind("rank 0: stopped during a gradient all-reduce because the other ranks gave up on it: rank 0 "
                        "failed: stopped answering: ",
                        0),
            0u)
      << error;
  two.ranks[1].reset();
}

// Three ranks, dist.timeout_s 8 s. Rank 2 is stuck after its step (it never starts the all-reduce);
// rank 0 waits in it from the start, rank 1 only from 7 s on. Rank 0's wait times out first, and
// its own neighbour, rank 1, waits with it; rank 1's watcher names rank 2 once its reads have seen
// it stand still for 5 s, while rank 0 still waits for a verdict: every rank reports rank 2 stuck,
// not a lost contact.
TEST(Communicator, AStuckRankIsNamedByItsWatcherThoughAnotherRanksWaitTimedOutFirst) {
  if (!testing::have_gloo()) GTEST_SKIP() << "this build has no Gloo backend";
  LocalRanks three(3, std::chrono::seconds(8));
  three.ranks[2]->note_progress("epoch 1 step 3");
  const auto start = std::chrono::steady_clock::now();
  const auto wait_in_all_reduce = [&](int rank, std::chrono::milliseconds join_after) {
    return std::async(std::launch::async, [&three, rank, join_after] {
      std::this_thread::sleep_for(join_after);
      auto mine = torch::ones({8});
      three.ranks[rank]->allreduce_async(mine);
      try {
        three.ranks[rank]->wait_all();
      } catch (const std::exception& e) {
        return std::string(e.what());
      }
      return std::string("it finished");
    });
  };
  auto first = wait_in_all_reduce(0, std::chrono::milliseconds(0));
  auto late = wait_in_all_reduce(1, std::chrono::milliseconds(7000));
  const std::string error0 = first.get(), error1 = late.get();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  three.ranks[2]->note_progress("stopping");  // its host moves on: its watch leaves this process be
  const std::string cause = "because rank 2 failed: stuck in its own work (epoch 1 step 3): it had not started the "
                            "collective rank 1 waited in";
  EXPECT_NE(error0.find("rank 0: stopped during a gradient all-reduce " + cause), std::string::npos) << error0;
  EXPECT_NE(error1.find("rank 1: stopped during a gradient all-reduce " + cause), std::string::npos) << error1;
  EXPECT_LT(took, 20.0);
  three.ranks[2].reset();  // it leaves: the others' abandoned all-reduces end
}

// A store whose every call waits until released, then fails: rank 0's store behind a cut link.
class SilentStore : public c10d::Store {
 public:
  void release_all() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      released_ = true;
    }
    opened_.notify_all();
  }
  bool entered() const { return entered_.load(); }
  // Pure in newer LibTorch, absent in 1.13 (so no `override`).
  c10::intrusive_ptr<c10d::Store> clone() { return c10::intrusive_ptr<c10d::Store>::reclaim_copy(this); }
  // Progress is published with the heartbeat: it passes too.
  void set(const std::string& key, const std::vector<uint8_t>&) override {
    if (key.rfind("tbench/progress/", 0) != 0) block();
  }
  std::vector<uint8_t> get(const std::string&) override { return block(), std::vector<uint8_t>(); }
  // Heartbeats pass (so entered() says the watch looked for failures); anything else blocks.
  int64_t add(const std::string& key, int64_t) override {
    return key.rfind("tbench/heartbeat/", 0) == 0 ? 0 : (block(), 0);
  }
  bool deleteKey(const std::string&) override { return block(), false; }
  bool check(const std::vector<std::string>&) override { return block(), false; }
  int64_t getNumKeys() override { return block(), 0; }
  void wait(const std::vector<std::string>&) override { block(); }
  void wait(const std::vector<std::string>&, const std::chrono::milliseconds&) override { block(); }

 private:
  void block() {
    entered_ = true;
    std::unique_lock<std::mutex> lock(mutex_);
    opened_.wait(lock, [&] { return released_; });
    throw std::runtime_error("connection closed");
  }
  std::mutex mutex_;
  std::condition_variable opened_;
  bool released_ = false;
  std::atomic<bool> entered_{false};
};

// The watch is the only reader of the store while a rank waits: a store that stops answering (the
// link to rank 0 cut; its client has no receive timeout) holds up the watch's thread, not the wait,
// nor the rank's exit.
TEST(FailureWatch, AStoreThatStopsAnsweringHoldsUpNoWait) {
  auto store = c10::make_intrusive<SilentStore>();
  auto watch = std::make_unique<FailureWatch>(store, 1);
  const auto start = std::chrono::steady_clock::now();
  watch->note_interest();
  for (int i = 0; i < 100 && !store->entered(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(store->entered()) << "the watch never looked";
  EXPECT_FALSE(watch->seen().has_value());
  EXPECT_FALSE(watch->look_now(std::chrono::milliseconds(200)).has_value());
  watch.reset();  // its thread, stuck in the store, is left behind
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(took, 2.0);
  store->release_all();  // the thread ends
}

// Failures are read in the order they were announced; a number drawn by a rank that died before
// writing under it is skipped.
TEST(FailureWatch, SeesTheFirstAnnouncedFailureAndSkipsAGap) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  store->add(kFailureCountKey, 1);  // drawn, never written
  write_failure(*store, 2, "its disk is full");
  write_failure(*store, 0, "stopped too");
  const auto failures = read_failures(*store);
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_EQ(failures[0].rank, 2);
  EXPECT_EQ(failures[1].error, "stopped too");
  FailureWatch watch(store, 1);
  EXPECT_FALSE(watch.seen().has_value()) << "it looks only when a wait asks";
  watch.note_interest();
  for (int i = 0; i < 100 && !watch.seen(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(watch.seen().has_value());
  EXPECT_EQ(watch.seen()->describe(), "rank 2 failed: its disk is full");
}

// A rank's watch beats its heartbeat at once and every kHeartbeatInterval, with no wait asking,
// and stops when the rank ends: rank 0 tells a live peer from a dead one by it.
TEST(FailureWatch, BeatsTheRanksHeartbeatWhileItLives) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  auto beats = [&] { return store->add(heartbeat_key(3), 0); };
  auto watch = std::make_unique<FailureWatch>(store, 3);
  for (int i = 0; i < 100 && beats() < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GE(beats(), 1) << "no first beat within a second";
  std::this_thread::sleep_for(kHeartbeatInterval + std::chrono::milliseconds(500));
  EXPECT_GE(beats(), 2);
  EXPECT_EQ(store->add(heartbeat_key(1), 0), 0) << "another rank's count moved";
  watch.reset();
  const int64_t at_end = beats();
  std::this_thread::sleep_for(kHeartbeatInterval + std::chrono::milliseconds(200));
  EXPECT_EQ(beats(), at_end);
}

// A rank waiting in a collective reads its neighbour's heartbeat once a beat. One that stands still
// for the silence limit is announced as failed on its behalf, naming the watcher, and the watch
// sees the announcement at once: every rank's wait then ends with it.
TEST(FailureWatch, AnnouncesTheWatchedRankWhenItsHeartbeatStandsStillDuringAWait) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  store->add(heartbeat_key(1), 5);  // rank 1 beat, then stopped
  const auto limit = std::chrono::milliseconds(1500);
  FailureWatch watch(store, 0, watched_neighbour(0, 2), limit);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 80 && !watch.seen(); ++i) {  // a wait, looking every 100 ms
    watch.note_interest();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(watch.seen().has_value()) << "rank 1's silence went unannounced for 8 s";
  EXPECT_GT(took, 1.5) << "announced before the limit";
  EXPECT_EQ(watch.seen()->rank, 1);
  EXPECT_EQ(watch.seen()->error, silent_rank_error(0, limit));
  EXPECT_NE(watch.seen()->describe().find("rank 1 failed: stopped answering"), std::string::npos);
  EXPECT_NE(watch.seen()->error.find("did not move for 1.5 s while rank 0 waited"), std::string::npos)
      << watch.seen()->error;
  for (int i = 0; i < 25; ++i) {  // the wait goes on for 2.5 beats: no second announcement
    watch.note_interest();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(read_failures(*store).size(), 1u) << "announced more than once";
}

// A neighbour that beats is never announced, however long the wait; nor is a silent one while no
// wait asks (a peer that finished stops beating, but no collective needs it then).
TEST(FailureWatch, LeavesABeatingNeighbourAndOneNoWaitNeedsAlone) {
  const auto limit = std::chrono::milliseconds(1200);
  auto beating = c10::make_intrusive<c10d::HashStore>();
  {
    FailureWatch watch(beating, 2, watched_neighbour(2, 3), limit);
    for (int i = 0; i < 30; ++i) {  // 3 s, more than twice the limit
      beating->add(heartbeat_key(0), 1);  // often, so a stalled test thread is no silence
      watch.note_interest();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_FALSE(watch.seen().has_value()) << watch.seen()->describe();
  }
  EXPECT_TRUE(read_failures(*beating).empty());
  auto idle = c10::make_intrusive<c10d::HashStore>();
  {
    FailureWatch watch(idle, 0, watched_neighbour(0, 2), limit);
    std::this_thread::sleep_for(limit * 2);
  }
  EXPECT_TRUE(read_failures(*idle).empty()) << "a silent rank was announced with no wait in progress";
}

TEST(HeartbeatSilence, LastsFromTheReadThatFirstSawTheCountToTheLatest) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  const auto t0 = std::chrono::steady_clock::now();
  HeartbeatSilence silence(t0, seconds(2));
  const auto read_at = [&](int64_t beats, int64_t ms) {
    silence.saw(beats, t0 + milliseconds(ms), t0 + milliseconds(ms + 5));  // answered in 5 ms
  };
  EXPECT_EQ(silence.vouched(), seconds(0)) << "no read, nothing vouched for";
  read_at(3, 1000);
  EXPECT_EQ(silence.vouched(), seconds(0));
  for (int64_t ms = 2000; ms <= 6000; ms += 1000) read_at(3, ms);  // unchanged: no beat since the first
  EXPECT_EQ(silence.vouched(), seconds(5));
  read_at(4, 7000);
  read_at(4, 8000);
  EXPECT_EQ(silence.vouched(), seconds(1));
}

// Reads further apart than the gap, or one slow to be answered, vouch for nothing in between:
// this process, or the store's host, may have been paused with the silent rank (a suspended job,
// a debugger), which beats again once resumed.
TEST(HeartbeatSilence, AGapOrASlowAnswerStartsTheCountAgain) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  const auto t0 = std::chrono::steady_clock::now();
  HeartbeatSilence paused(t0, seconds(2));
  paused.saw(3, t0 + seconds(1), t0 + milliseconds(1005));
  paused.saw(3, t0 + seconds(21), t0 + milliseconds(21005));  // 20 s with no read
  EXPECT_EQ(paused.vouched(), seconds(0));
  HeartbeatSilence stalled(t0, seconds(2));
  stalled.saw(3, t0 + seconds(1), t0 + milliseconds(1005));
  stalled.saw(3, t0 + seconds(2), t0 + seconds(22));  // the store answered 20 s late
  EXPECT_EQ(stalled.vouched(), seconds(0));
  stalled.saw(3, t0 + seconds(23), t0 + seconds(24));
  EXPECT_EQ(stalled.vouched(), seconds(2)) << "reads in time count from the late answer";
}

TEST(FailureWatch, TellsAWatchersAnnouncementFromARanksOwn) {
  EXPECT_TRUE(is_silent_rank_error(silent_rank_error(3, std::chrono::seconds(15))));
  EXPECT_FALSE(is_silent_rank_error("epoch 1 step 3: failed on purpose"));
  const std::string stuck = stuck_rank_error(3, "epoch 1 step 4", std::chrono::milliseconds(7500));
  EXPECT_TRUE(is_stuck_rank_error(stuck));
  EXPECT_FALSE(is_silent_rank_error(stuck));
  EXPECT_FALSE(is_stuck_rank_error(silent_rank_error(3, std::chrono::seconds(15))));
  EXPECT_NE(stuck.find("stuck in its own work (epoch 1 step 4): it had not started the collective rank 3 waited in, "
                       "and its progress did not move for 7.5 s while its heartbeat beat"),
            std::string::npos)
      << stuck;
}

TEST(RankProgress, TravelsAsJsonAndRefusesWhatIsNotOurs) {
  const auto back = parse_progress(progress_text({12, 5, "epoch 2 step 3"}));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->moves, 12);
  EXPECT_EQ(back->collectives, 5);
  EXPECT_EQ(back->where, "epoch 2 step 3");
  EXPECT_FALSE(parse_progress("not json").has_value());
  EXPECT_FALSE(parse_progress(R"({"moves": 1})").has_value());
}

// Stuck: behind the watcher's collective, alive, and still for the limit. Each alone is not enough.
TEST(RankProgress, AStuckRankIsBehindAliveAndStill) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  const RankProgress behind{7, 2, "epoch 1 step 4"};
  EXPECT_TRUE(stuck_in_own_work(behind, 3, seconds(1), seconds(6), milliseconds(5000)));
  EXPECT_FALSE(stuck_in_own_work(behind, 2, seconds(1), seconds(60), milliseconds(5000)))
      << "it waits in the same collective: not its own work";
  EXPECT_FALSE(stuck_in_own_work(behind, 3, seconds(10), seconds(60), milliseconds(5000)))
      << "its heartbeat stands still: silent (or paused), not stuck";
  EXPECT_FALSE(stuck_in_own_work(behind, 3, seconds(1), seconds(4), milliseconds(5000))) << "moved within the limit";
}

// The watched rank's heartbeat and progress, as that rank's own watch would publish them.
struct WatchedRank {
  WatchedRank(c10::intrusive_ptr<c10d::Store> store, int rank, RankProgress progress)
      : store_(std::move(store)), rank_(rank), progress_(std::move(progress)) {
    publish();
  }
  void beat() { store_->add(heartbeat_key(rank_), 1); }
  void move() {
    ++progress_.moves;
    publish();
  }
  void publish() { publish_progress(*store_, rank_, progress_); }
  c10::intrusive_ptr<c10d::Store> store_;
  int rank_;
  RankProgress progress_;
};

// A waiting watch with the given stall limit, over `seconds` of a wait (interest every 100 ms) in
// which `each_tick` runs; returns how long it took to see a failure (or nullopt).
std::optional<double> wait_watching(FailureWatch& watch, double seconds, const std::function<void()>& each_tick) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < static_cast<int>(seconds * 10) && !watch.seen(); ++i) {
    each_tick();
    watch.note_interest();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!watch.seen()) return std::nullopt;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A neighbour that beats but has not started the collective this rank waits in, and whose progress
// stands still for dist.stall_timeout_s, is announced as stuck, with where it said it was.
TEST(FailureWatch, AnnouncesAWatchedRankStuckInItsOwnWorkAtTheStallLimit) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  WatchedRank rank1(store, 1, {7, 2, "epoch 1 step 4"});
  FailureWatch watch(store, 0, watched_neighbour(0, 2), std::chrono::seconds(15), std::chrono::milliseconds(1500));
  watch.note_waiting_on(3);  // this rank is in its third collective
  const auto took = wait_watching(watch, 8, [&] { rank1.beat(); });
  ASSERT_TRUE(took.has_value()) << "a stuck neighbour went unannounced for 8 s";
  EXPECT_GT(*took, 1.5) << "announced before the stall limit";
  EXPECT_EQ(watch.seen()->rank, 1);
  EXPECT_TRUE(is_stuck_rank_error(watch.seen()->error)) << watch.seen()->error;
  EXPECT_NE(watch.seen()->error.find("(epoch 1 step 4): it had not started the collective rank 0 waited in"),
            std::string::npos)
      << watch.seen()->error;
}

// A neighbour in the same collective, or one whose progress moves, is never stuck, however long
// the wait; without a stall limit a stuck one is named only once the wait has timed out.
TEST(FailureWatch, NamesAStuckRankOnlyPastItsLimitAndNeverOneThatMovesOrWaitsToo) {
  using std::chrono::milliseconds;
  auto in_it = c10::make_intrusive<c10d::HashStore>();
  WatchedRank waiting_too(in_it, 1, {7, 3, "epoch 1 step 4"});
  {
    FailureWatch watch(in_it, 0, watched_neighbour(0, 2), std::chrono::seconds(15), milliseconds(1200));
    watch.note_waiting_on(3);
    EXPECT_FALSE(wait_watching(watch, 3, [&] { waiting_too.beat(); }).has_value()) << watch.seen()->describe();
  }
  auto busy = c10::make_intrusive<c10d::HashStore>();
  WatchedRank moving(busy, 1, {7, 2, "epoch 1 step 4"});
  {
    FailureWatch watch(busy, 0, watched_neighbour(0, 2), std::chrono::seconds(15), milliseconds(1200));
    watch.note_waiting_on(3);
    EXPECT_FALSE(wait_watching(watch, 3, [&] {
                   moving.beat();
                   moving.move();
                 }).has_value())
        << watch.seen()->describe();
  }
  auto stuck = c10::make_intrusive<c10d::HashStore>();
  WatchedRank still(stuck, 1, {7, 2, "epoch 1 step 4"});
  {
    FailureWatch watch(stuck, 0, watched_neighbour(0, 2));  // no stall limit: dist.timeout_s alone
    watch.note_waiting_on(3);
    const double wait_s = std::chrono::duration<double>(kStuckAtTimeout).count() + 2.5;
    EXPECT_FALSE(wait_watching(watch, wait_s, [&] { still.beat(); }).has_value()) << watch.seen()->describe();
    std::optional<RankFailure> named;
    for (int i = 0; i < 3 && !named; ++i) named = watch.look_now(std::chrono::seconds(2), /*wait_timed_out=*/true);
    ASSERT_TRUE(named.has_value()) << "the wait timed out, and the rank it waited for was not named";
    EXPECT_EQ(named->rank, 1);
    EXPECT_TRUE(is_stuck_rank_error(named->error)) << named->error;
  }
  for (const auto& store : {in_it, busy}) EXPECT_TRUE(read_failures(*store).empty());
}

// With three or more ranks the rank whose wait times out first may watch a rank that waits too,
// while the stuck rank's watcher joined the collective later and is not at its timeout yet: the
// first counts its timeout in the store, and the stuck rank's watcher names it at its next beat,
// before the first rank gives up (and its exit ends the others' waits with nobody named).
TEST(FailureWatch, NamesAStuckNeighbourOnceAnotherRanksWaitTimedOut) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  WatchedRank stuck(store, 2, {7, 2, "epoch 1 step 4"});  // it never started collective 3
  FailureWatch first(store, 0, watched_neighbour(0, 3));  // watches rank 1, which waits too
  FailureWatch watcher(store, 1, watched_neighbour(1, 3));  // watches rank 2; no stall limit
  for (FailureWatch* rank : {&first, &watcher}) {
    for (int i = 0; i < 3; ++i) rank->note_collective();
    rank->note_waiting_on(3);
  }
  // Both wait, from a thread of their own (a wait's interest lapses 300 ms after it last asked).
  std::atomic<bool> waiting{true};
  std::thread waits([&] {
    while (waiting) {
      stuck.beat();
      first.note_interest();
      watcher.note_interest();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  const auto named_within = [&](double seconds) -> std::optional<double> {
    const auto start = std::chrono::steady_clock::now();
    while (!watcher.seen() && seconds_since(start) < seconds) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return watcher.seen() ? std::optional<double>(seconds_since(start)) : std::nullopt;
  };
  const double still_s = std::chrono::duration<double>(kStuckAtTimeout).count() + 1.5;
  const bool named_early = named_within(still_s).has_value();
  const auto verdict_of_first = first.look_now(std::chrono::seconds(2), /*wait_timed_out=*/true);
  const auto took = named_within(3);
  waiting = false;
  waits.join();
  EXPECT_FALSE(named_early) << "named before any wait timed out: " << watcher.seen()->describe();
  EXPECT_FALSE(verdict_of_first.has_value() && verdict_of_first->rank == 1)
      << "rank 0 named the rank that waits with it: " << verdict_of_first->describe();
  ASSERT_TRUE(took.has_value()) << "rank 0's wait timed out, and rank 2's watcher did not name it within 3 s";
  EXPECT_EQ(watcher.seen()->rank, 2);
  EXPECT_TRUE(is_stuck_rank_error(watcher.seen()->error)) << watcher.seen()->error;
  EXPECT_NE(watcher.seen()->error.find("(epoch 1 step 4): it had not started the collective rank 1 waited in"),
            std::string::npos)
      << watcher.seen()->error;
  const auto verdict = first.look_now(std::chrono::seconds(2), /*wait_timed_out=*/true);
  ASSERT_TRUE(verdict.has_value()) << "rank 0 did not read the verdict";
  EXPECT_EQ(verdict->rank, 2);
  EXPECT_EQ(store->add(kWaitsTimedOutKey, 0), 1) << "a wait that timed out is counted once";
}

// A rank the others gave up on (its watcher announced it stuck or silent) whose host then stays
// where it was for the grace is stuck where none of its own waits can see it: its watch ends the
// process with exit code 4, saying why, instead of leaving it to hold its node until the launcher
// or the job's time limit ends it.
TEST(FailureWatchDeathTest, EndsARankTheOthersGaveUpOnWhoseHostNeverMoves) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        auto store = c10::make_intrusive<c10d::HashStore>();
        write_failure(*store, 1, stuck_rank_error(0, "epoch 1 step 3", std::chrono::seconds(9)));
        FailureWatch watch(store, 1);
        watch.end_process_when_abandoned(std::chrono::milliseconds(500));
        std::this_thread::sleep_for(std::chrono::seconds(10));
        std::exit(0);
      },
      ::testing::ExitedWithCode(4),
      "rank 1: the other ranks gave up on it .rank 1 failed: stuck in its own work .epoch 1 step 3.*and its host has "
      "not moved from setting up in the 0.5 s since: ending the process");
}

// A rank whose host moves after the others gave up on it reaches its next wait and stops there;
// one that announced its own failure was not given up on. Neither is ended by its watch (in a
// child process: a watch that ended it wrongly would end the whole test binary).
TEST(FailureWatchDeathTest, LeavesARankWhoseHostMovesOrWhoAnnouncedItselfToEndAsItWill) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const auto grace = std::chrono::milliseconds(1500);
        auto given_up = c10::make_intrusive<c10d::HashStore>();
        write_failure(*given_up, 1, silent_rank_error(0, std::chrono::seconds(15)));
        auto own = c10::make_intrusive<c10d::HashStore>();
        write_failure(*own, 2, "its disk is full");
        FailureWatch moving(given_up, 1);
        moving.end_process_when_abandoned(grace);
        FailureWatch announcing(own, 2);
        announcing.note_own_failure();
        announcing.end_process_when_abandoned(grace);
        for (int i = 0; i < 50 && !given_up->check({released_key(1)}); ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        if (!given_up->check({released_key(1)})) std::exit(3);  // it never read its fate
        moving.note_progress("stopping");
        std::this_thread::sleep_for(2 * grace);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// The set-up has no step to bound it (rank 0 alone loads the weights before the broadcast the
// others wait in): the stall limit leaves it to the wait's timeout.
TEST(FailureWatch, LeavesARankSettingUpToTheTimeout) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  WatchedRank setting_up(store, 1, {1, 0, kSettingUp});
  FailureWatch watch(store, 0, watched_neighbour(0, 2), std::chrono::seconds(15), std::chrono::milliseconds(1200));
  watch.note_waiting_on(1);  // the weights' broadcast
  EXPECT_FALSE(wait_watching(watch, 3, [&] { setting_up.beat(); }).has_value()) << watch.seen()->describe();
  EXPECT_TRUE(read_failures(*store).empty());
}

// A rank's watch publishes where its host is with its heartbeat, for the rank that watches it.
TEST(FailureWatch, PublishesWhereTheRankIsWithItsHeartbeat) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  FailureWatch watch(store, 3);
  watch.note_progress("epoch 2 step 7");
  watch.note_collective();
  watch.note_collective();
  std::optional<RankProgress> seen;
  for (int i = 0; i < 30 && (!seen || seen->collectives < 2); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    seen = read_progress(*store, 3);
  }
  ASSERT_TRUE(seen.has_value()) << "nothing published within 3 s";
  EXPECT_EQ(seen->where, "epoch 2 step 7");
  EXPECT_EQ(seen->collectives, 2);
  EXPECT_EQ(seen->moves, 3);
}

// A host that moves after standing still for a beat (it resumes, and joins the collective its
// watcher waits in) is published at once, not at its next beat: a watcher reading it within that
// beat would take it for stuck.
TEST(FailureWatch, PublishesAMoveAfterAStillBeatAtOnce) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  FailureWatch watch(store, 3);
  const auto published_collectives = [&] {
    const auto seen = read_progress(*store, 3);
    return seen ? seen->collectives : int64_t{-1};
  };
  for (int64_t round = 1; round <= 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2300));  // two beats at least: one saw it still
    const auto moved = std::chrono::steady_clock::now();
    watch.note_collective();
    while (published_collectives() < round && std::chrono::steady_clock::now() - moved < std::chrono::seconds(3)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const double lag = std::chrono::duration<double>(std::chrono::steady_clock::now() - moved).count();
    ASSERT_EQ(published_collectives(), round);
    EXPECT_LT(lag, 0.3) << "round " << round << ": published at the next beat, not at once";
  }
}

TEST(FailureWatch, EachRankWatchesTheNextAroundTheRing) {
  EXPECT_EQ(watched_neighbour(0, 1), std::nullopt);
  EXPECT_EQ(watched_neighbour(0, 2), 1);
  EXPECT_EQ(watched_neighbour(1, 2), 0);
  EXPECT_EQ(watched_neighbour(6, 8), 7);
  EXPECT_EQ(watched_neighbour(7, 8), 0);
}

// Two parameters; `b` takes part in the loss only when asked, as a parameter some steps leave out.
struct TwoParameters : torch::nn::Module {
  TwoParameters() {
    a = register_parameter("a", torch::randn({64}));
    b = register_parameter("b", torch::randn({64}));
  }
  torch::Tensor loss(const torch::Tensor& x, bool use_b) { return (a * x).sum() + (use_b ? (b * x * x).sum() : 0 * x.sum()); }
  torch::Tensor a, b;
};

// The gradient sync of a one-rank Gloo world in this process, and one optimizer step's backward.
struct OneRankSync {
  explicit OneRankSync(TwoParameters& model, bool in_buckets) {
    LaunchEnv env;
    env.launcher = Launcher::torchrun;
    env.master_addr = "127.0.0.1";
    env.master_port = testing::free_tcp_port();
    comm = Communicator::connect(env, torch::kCPU, std::chrono::seconds(20));
    DistSpec spec;
    spec.gradient_as_bucket_view = in_buckets;
    sync = make_gradient_sync(*comm, model, spec);
  }
  void step(TwoParameters& model, const torch::Tensor& x, bool use_b) {
    sync->before_backward(/*last_micro_step=*/true, /*stop=*/false);
    model.loss(x, use_b).backward();
    sync->after_backward();
  }
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<GradientSync> sync;
};

// dist.gradient_as_bucket_view: after its first step a gradient stays at one address (its place in
// the bucket) and is zeroed there between steps; a step that leaves a parameter out leaves it
// with no gradient, as copied gradients do, so AdamW does not decay it.
TEST(GradientSync, GradientsLiveInTheBucketsAndAParameterLeftOutHasNone) {
  if (!testing::have_gloo()) GTEST_SKIP() << "this build has no Gloo backend";
  TwoParameters model;
  OneRankSync one(model, /*in_buckets=*/true);
  const auto x = torch::randn({64});
  one.step(model, x, true);
  const void* a_in_bucket = model.a.grad().data_ptr();
  one.sync->zero_gradients(model);
  ASSERT_TRUE(model.a.grad().defined());
  EXPECT_EQ(model.a.grad().abs().sum().item<float>(), 0.0f);
  one.step(model, x, true);
  EXPECT_EQ(model.a.grad().data_ptr(), a_in_bucket);  // added into, not replaced
  EXPECT_TRUE(torch::equal(model.a.grad(), x));      // the mean over one rank
  EXPECT_TRUE(torch::allclose(model.b.grad(), x * x));
  one.sync->zero_gradients(model);
  one.step(model, x, false);
  EXPECT_TRUE(torch::equal(model.a.grad(), x));
  EXPECT_FALSE(model.b.grad().defined()) << "a parameter left out of the step kept a zero gradient";
  one.sync->zero_gradients(model);
  one.step(model, x, true);  // back in: its gradient returns to the bucket
  EXPECT_TRUE(torch::allclose(model.b.grad(), x * x));
  EXPECT_EQ(model.a.grad().data_ptr(), a_in_bucket);
}

TEST(GradientSync, CopiedGradientsAreDroppedBetweenSteps) {
  if (!testing::have_gloo()) GTEST_SKIP() << "this build has no Gloo backend";
  TwoParameters model;
  OneRankSync one(model, /*in_buckets=*/false);
  const auto x = torch::randn({64});
  one.step(model, x, true);
  EXPECT_TRUE(torch::equal(model.a.grad(), x));
  one.sync->zero_gradients(model);
  EXPECT_FALSE(model.a.grad().defined());
}

TEST(Data, ShardsTakeEveryWorldSizethSample) {
  const std::vector<int64_t> order = {9, 3, 7, 1, 0, 5, 2};
  EXPECT_EQ(shard_order(order, 0, 2), (std::vector<int64_t>{9, 7, 0, 2}));
  EXPECT_EQ(shard_order(order, 1, 2), (std::vector<int64_t>{3, 1, 5}));
  EXPECT_EQ(shard_order(order, 2, 3), (std::vector<int64_t>{7, 5}));
  EXPECT_EQ(shard_order(order, 0, 1), order);
}

TEST(Spec, DistSectionHasDefaultsAndIsRecorded) {
  const RunSpec spec = resolve_spec(parse_spec_text(R"({"model": "tiny-bert"})", "s.json", false));
  EXPECT_EQ(spec.dist.bucket_mb, 25);
  EXPECT_FALSE(spec.dist.sync_every_micro_step);
  EXPECT_TRUE(spec.dist.gradient_as_bucket_view);
  EXPECT_EQ(spec.resolved["dist"]["gradient_as_bucket_view"], true);
  EXPECT_EQ(spec.dist.timeout_s, 300);
  EXPECT_EQ(spec.resolved["dist"]["timeout_s"], 300);
  SpecDocument bad = parse_spec_text(R"({"model": "tiny-bert", "dist": {"timeout_s": 0}})", "s.json", false);
  EXPECT_THROW(resolve_spec(bad), Error);
  SpecDocument typo = parse_spec_text(R"({"model": "tiny-bert", "dist": {"bucket_md": 4}})", "s.json", false);
  try {
    resolve_spec(typo);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'bucket_mb'"), std::string::npos) << e.what();
  }
}

// A result with `world` processes, on one host, whose epochs take `epoch_seconds`: the epoch is
// the steps of `per_device_batch` that `num_samples` fill on every process (drop_last).
json scaling_result(int64_t world, double epoch_seconds, int64_t per_device_batch = 8, int64_t num_samples = 64,
                    int64_t threads = 1) {
  const int64_t steps = num_samples / (per_device_batch * world);
  json iterations = json::array();
  for (int64_t s = 1; s <= steps; ++s) {
    iterations.push_back({{"epoch", 1}, {"step", s}, {"global_step", s}, {"samples", per_device_batch},
                          {"tokens", 128}, {"real_tokens", 128}, {"seconds", epoch_seconds / static_cast<double>(steps)},
                          {"data_seconds", 0.0}, {"loss", 0.5}, {"lr", 1e-4}, {"warmup", false}});
  }
  const double epoch_samples = static_cast<double>(steps * per_device_batch * world);
  json result = {{"schema", kResultSchemaId},
                 {"spec", {{"name", "t"}, {"device", "cpu"}, {"precision", "fp32"}, {"threads", threads},
                           {"train", {{"batch_size", per_device_batch}, {"grad_accum_steps", 1}}},
                           {"data", {{"seq_len", 64}, {"num_samples", num_samples}}}}},
                 {"env", {{"host", "h"}}},
                 {"model", {{"name", "m"}, {"params", 10}, {"train_flops_per_sample", 1e9}}},
                 {"iterations", iterations},
                 {"epochs", json::array({{{"epoch", 1}, {"steps", steps}, {"seconds", epoch_seconds}, {"complete", true}}})},
                 {"summary", {{"status", "completed"}, {"steps_per_epoch", steps}, {"epoch_seconds", epoch_seconds},
                              {"samples_per_s", epoch_samples / epoch_seconds}}}};
  if (world > 1) {
    json ranks = json::array();
    for (int64_t r = 0; r < world; ++r) ranks.push_back({{"rank", r}, {"host", "h"}});
    result["dist"] = {{"world_size", world}, {"ranks", ranks}};
    result["summary"]["comm_share"] = 0.1;
  }
  return result;
}

TEST(Scaling, SpeedupAndEfficiencyAgainstTheOneProcessRun) {
  testing::ScratchDir dir;
  std::vector<std::string> paths;
  const std::vector<std::pair<int64_t, double>> runs = {{1, 10.0}, {2, 6.0}, {4, 2.0}, {8, 3.0}};
  for (const auto& [world, seconds] : runs) {
    paths.push_back(dir.write("w" + std::to_string(world) + ".json", scaling_result(world, seconds).dump()));
  }
  paths.push_back(dir.write("other.json", scaling_result(2, 5.0, /*per_device_batch=*/16).dump()));
  const auto results = load_results(paths);
  EXPECT_EQ(results[1].world_size, 2);
  EXPECT_EQ(results[1].step_samples.front(), 16);  // rank 0's 8 samples x 2 ranks
  EXPECT_EQ(label_of(results[1], "world_size"), "2 processes");
  EXPECT_EQ(label_of(results[0], "world_size"), "1 process");

  const auto rows = build_scaling(results);
  ASSERT_EQ(rows.size(), 5u);
  std::map<std::pair<int64_t, bool>, ScalingRow> by;  // (world, batch 16)
  for (const auto& r : rows) by[std::make_pair(r.world_size, r.config.find("batch 16") != std::string::npos)] = r;
  const auto row = [&](int64_t world, bool batch16) { return by.at(std::make_pair(world, batch16)); };
  EXPECT_DOUBLE_EQ(*row(1, false).speedup, 1.0);
  EXPECT_DOUBLE_EQ(*row(2, false).speedup, 10.0 / 6.0);
  EXPECT_DOUBLE_EQ(*row(2, false).efficiency, 10.0 / 6.0 / 2);
  EXPECT_EQ(row(2, false).flag, "");
  EXPECT_EQ(row(4, false).flag, "super-linear");  // 5x on 4
  EXPECT_EQ(row(8, false).flag, "collapsing");    // 3.3x on 8
  EXPECT_EQ(row(2, true).flag, "no 1-process baseline");
  EXPECT_FALSE(row(2, true).speedup.has_value());
  EXPECT_DOUBLE_EQ(*row(2, false).comm_share, 0.1);

  const std::string table = render_scaling(rows, "table");
  EXPECT_NE(table.find("super-linear"), std::string::npos) << table;
  EXPECT_NE(render_scaling(rows, "markdown").find("| m |"), std::string::npos);
  EXPECT_EQ(json::parse(render_scaling(rows, "json"))["rows"].size(), 5u);
  EXPECT_NE(render_scaling(rows, "csv").find("model,config,world_size"), std::string::npos);
  EXPECT_THROW(render_scaling(rows, "html"), Error);
}

// With drop_last an N-process epoch can train on fewer samples than the 1-process one: 32 samples
// of batch 4 are 8 steps for one process but 2 for three (24 samples). T1/TN of the epochs called
// that 4x; per trained sample it is 3x, which the global samples/s say too.
TEST(Scaling, SpeedupComparesEpochTimePerTrainedSample) {
  testing::ScratchDir dir;
  const auto results = load_results({dir.write("w1.json", scaling_result(1, 8.0, 4, 32).dump()),
                                     dir.write("w3.json", scaling_result(3, 2.0, 4, 32).dump())});
  const auto rows = build_scaling(results);
  ASSERT_EQ(rows.size(), 2u);
  const ScalingRow& three = rows[0].world_size == 3 ? rows[0] : rows[1];
  const ScalingRow& one = rows[0].world_size == 1 ? rows[0] : rows[1];
  EXPECT_DOUBLE_EQ(one.epoch_samples, 32);
  EXPECT_DOUBLE_EQ(three.epoch_samples, 24);
  ASSERT_TRUE(three.speedup.has_value());
  EXPECT_DOUBLE_EQ(*three.speedup, 3.0);
  EXPECT_DOUBLE_EQ(*three.speedup, three.samples_per_s / one.samples_per_s);
  EXPECT_DOUBLE_EQ(*three.efficiency, 1.0);
}

// A 1-process baseline under data.drop_last false trains its last, partial step too: counted as a
// full batch (steps x batch), its epoch trained 224 samples for 200 and the speedup read 11% low
// (found by an audit). The epochs' own count stands; rows that average unlike runs, or set a
// measured epoch against a projected one, are warned of.
TEST(Scaling, CountsTheSamplesTheEpochsTrained) {
  testing::ScratchDir dir;
  json partial = scaling_result(1, 10.0);  // 8 steps of 8
  partial["iterations"].back()["samples"] = 4;
  partial["epochs"][0]["samples"] = 60;
  partial["spec"]["data"]["drop_last"] = false;
  const json two = scaling_result(2, 6.0);  // 4 steps of 8 on each of 2 ranks: 64 samples
  std::vector<std::string> warnings;
  const auto rows = build_scaling(load_results({dir.write("w1.json", partial.dump()), dir.write("w2.json", two.dump())}),
                                  &warnings);
  const ScalingRow& row = rows[0].world_size == 2 ? rows[0] : rows[1];
  ASSERT_TRUE(row.speedup.has_value()) << row.flag;
  EXPECT_DOUBLE_EQ(*row.speedup, (10.0 / 60) / (6.0 / 64));
  EXPECT_TRUE(warnings.empty());

  json full = scaling_result(1, 10.0);
  full["spec"]["data"]["drop_last"] = true;
  warnings.clear();
  build_scaling(load_results({dir.write("w1.json", partial.dump()), dir.write("full.json", full.dump()),
                              dir.write("w2.json", two.dump())}),
                &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("its 2 runs differ in data.drop_last"), std::string::npos) << warnings[0];

  json projected = scaling_result(1, 10.0);
  projected["epochs"][0]["complete"] = false;
  projected["summary"].erase("epoch_seconds");
  projected["summary"]["projected_epoch_seconds"] = 10.0;
  warnings.clear();
  build_scaling(load_results({dir.write("p1.json", projected.dump()), dir.write("w2.json", two.dump())}), &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("against epochs projected from steady steps"), std::string::npos) << warnings[0];
}

// `threads: 0` gives one process every core and N processes cores / N each, so their thread
// counts differ and no 1-process run matched (found by review). On CPU the baseline is then the
// 1-process run that used the same cores; with the same threads per process, that one still wins.
// A GPU's step does not depend on the host's threads: they are no part of its config.
TEST(Scaling, ABaselineOnTheSameCoresWhereThreadsPerProcessDiffer) {
  testing::ScratchDir dir;
  const auto rows = build_scaling(load_results({dir.write("w1.json", scaling_result(1, 10.0, 8, 64, 2).dump()),
                                                dir.write("w2.json", scaling_result(2, 6.0, 8, 64, 1).dump())}));
  ASSERT_EQ(rows.size(), 2u);
  const ScalingRow& two = rows[0].world_size == 2 ? rows[0] : rows[1];
  ASSERT_TRUE(two.speedup.has_value()) << two.flag;
  EXPECT_DOUBLE_EQ(*two.speedup, 10.0 / 6.0);
  EXPECT_EQ(two.baseline, "1 process, 2 threads/process");
  EXPECT_NE(render_scaling(rows, "table").find("vs 1 process, 2 threads/process"), std::string::npos);

  // A 1-process run with the same threads per process is the baseline where there is one.
  const auto both = build_scaling(load_results({dir.write("w1.json", scaling_result(1, 10.0, 8, 64, 2).dump()),
                                                dir.write("w1t1.json", scaling_result(1, 12.0, 8, 64, 1).dump()),
                                                dir.write("w2.json", scaling_result(2, 6.0, 8, 64, 1).dump())}));
  for (const auto& row : both) {
    if (row.world_size != 2) continue;
    EXPECT_DOUBLE_EQ(*row.speedup, 12.0 / 6.0);
    EXPECT_EQ(row.baseline, "");
  }

  // On another host the second process used other cores: no same-cores baseline.
  json split = scaling_result(2, 6.0, 8, 64, 1);
  split["dist"]["ranks"][1]["host"] = "h2";
  const auto apart = build_scaling(load_results({dir.write("w1.json", scaling_result(1, 10.0, 8, 64, 2).dump()),
                                                 dir.write("split.json", split.dump())}));
  for (const auto& row : apart) {
    if (row.world_size == 2) {
      EXPECT_EQ(row.flag, "no 1-process baseline");
    }
  }
  split["dist"]["ranks"][1]["host"] = 7;  // a hand-edited file: read, not an internal error
  EXPECT_EQ(load_result(dir.write("odd.json", split.dump())).processes_on_host, 1);

  json gpu_one = scaling_result(1, 10.0, 8, 64, 16), gpu_two = scaling_result(2, 6.0, 8, 64, 8);
  gpu_one["spec"]["device"] = gpu_two["spec"]["device"] = "cuda:0";
  const auto gpu = build_scaling(load_results({dir.write("g1.json", gpu_one.dump()), dir.write("g2.json", gpu_two.dump())}));
  for (const auto& row : gpu) {
    EXPECT_EQ(row.config.find("thread"), std::string::npos) << row.config;
    if (row.world_size == 2) {
      EXPECT_EQ(row.baseline, "");
      EXPECT_DOUBLE_EQ(*row.speedup, 10.0 / 6.0);
    }
  }
}

// A single-GPU run that replayed a CUDA graph is no baseline for data-parallel runs, whose steps
// are eager: their efficiency would count the graph's gain as a loss to scaling.
TEST(Scaling, AGraphedRunIsNoBaselineForEagerDataParallelRuns) {
  testing::ScratchDir dir;
  json graphed = scaling_result(1, 4.0);
  graphed["spec"]["train"]["cuda_graph"] = true;
  json eager_pair = scaling_result(2, 3.0);
  eager_pair["spec"]["train"]["cuda_graph"] = false;
  const auto results = load_results({dir.write("graphed.json", graphed.dump()), dir.write("w2.json", eager_pair.dump())});
  EXPECT_TRUE(results[0].cuda_graph);
  EXPECT_FALSE(results[1].cuda_graph);
  auto rows = build_scaling(results);
  ASSERT_EQ(rows.size(), 2u);
  const auto& one = rows[0].world_size == 1 ? rows[0] : rows[1];
  const auto& two = rows[0].world_size == 1 ? rows[1] : rows[0];
  EXPECT_NE(one.config.find("CUDA graph"), std::string::npos) << one.config;
  EXPECT_FALSE(two.speedup.has_value()) << "4 s graphed against 3 s eager is no scaling figure";
  EXPECT_EQ(two.flag, "no eager 1-process baseline (rerun it with train.cuda_graph=false)");

  json eager_one = scaling_result(1, 5.0);
  eager_one["spec"]["train"]["cuda_graph"] = false;
  rows = build_scaling(load_results({dir.write("graphed.json", graphed.dump()), dir.write("w2.json", eager_pair.dump()),
                                     dir.write("eager.json", eager_one.dump())}));
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& row : rows) {
    if (row.world_size != 2) continue;
    ASSERT_TRUE(row.speedup.has_value()) << row.flag;
    EXPECT_DOUBLE_EQ(*row.speedup, 5.0 / 3.0) << "against the eager run";
  }
}

}  // namespace
}  // namespace tbench
