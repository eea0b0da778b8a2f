#pragma once
// Data-parallel training on torch.distributed's C++ core (c10d): finding the launcher's
// environment, the rendezvous (c10d::TCPStore hosted by rank 0), the process group (Gloo on CPU,
// NCCL on CUDA), the bucketed gradient all-reduce the trainer calls, and gathering every rank's
// timings into rank 0's result. Without a launcher none of this runs: detect_launch() says
// "single process" and the runner never creates a Communicator.
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "tbench/results/result.hpp"
#include "tbench/spec/spec.hpp"
#include "tbench/train/trainer.hpp"

namespace tbench {

// ---- launch environment ------------------------------------------------------------------------

enum class Launcher { none, torchrun, slurm, mpi };
const char* to_string(Launcher launcher);

struct LaunchEnv {
  Launcher launcher = Launcher::none;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 0;  // processes on this node; 0 = the launcher did not say
  int cpus_per_task = 0;     // srun --cpus-per-task (SLURM_CPUS_PER_TASK): each process's cores; 0 = unset
  std::string master_addr;   // where the TCPStore is: rank 0 hosts it, unless the launcher does
  int master_port = 0;
  // torchrun's agent already hosts the store (TORCHELASTIC_USE_AGENT_STORE=True): every rank joins
  // it as a client, under the key prefix PyTorch uses ("/worker/attempt_<restart count>").
  bool agent_store = false;
  std::string store_prefix;
  // A launcher's one process that joins a group of one all the same (dist.group_at_world_size_1).
  bool group_alone = false;
  // Several processes: the process group, the sharded data and the gradient sync are used.
  // A launcher that starts one process (torchrun --nproc-per-node=1) runs the single-process path
  // unless the spec asks it to join a group of one.
  bool distributed() const { return world_size > 1 || group_alone; }
};

// Reads an environment variable; empty means unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// torchrun (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) first; then Open MPI
// (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK), ahead of srun because its ranks inside an allocation
// inherit srun's SLURM_* from its daemons; then srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID
// inside a job step, i.e. with SLURM_STEP_ID set; MASTER_ADDR from the environment, else the first
// host of SLURM_STEP_NODELIST or SLURM_JOB_NODELIST, else SLURM_LAUNCH_NODE_IPADDR; MASTER_PORT
// default 29500; the tasks on this node from SLURM_STEP_TASKS_PER_NODE at SLURM_NODEID;
// SLURM_CPUS_PER_TASK). None of them: a single process. A half-set environment (RANK without
// WORLD_SIZE, several processes without MASTER_ADDR, a rank outside the world, ...) is a bad-input
// Error (exit 2) naming the variables.
LaunchEnv detect_launch(const EnvLookup& lookup);
LaunchEnv detect_launch();  // from this process's environment

// "node[01-04,07],gpu5" -> "node01": the first host of a SLURM node list.
std::string first_host_of_nodelist(const std::string& nodelist);

// "2(x3),1" (SLURM's tasks per node), node 3 -> 1: the tasks on that node; 0 where unreadable.
int tasks_on_node(const std::string& tasks_per_node, int node);

// CPU threads for `threads: 0`: srun's --cpus-per-task where given, else the cores this process may
// use (usable_cores(): its CPU affinity) shared among the processes of this node.
int threads_per_process(const LaunchEnv& env, int usable_cores);

// The CUDA device index of a data-parallel process: cuda:LOCAL_RANK, or cuda:0 where the launcher
// gave each task one GPU of its own (one visible device, several tasks on the node).
int rank_device_index(const LaunchEnv& env, int64_t visible_devices);

// Bad-input checks that need the launch environment and the spec (exit 2): the backend exists in
// this build, and cuda:LOCAL_RANK exists. (That the data fills a global step is checked once the
// data is read: check_samples_fill_a_step in prepare_run.)
void check_launch(const RunSpec& spec, const LaunchEnv& env);

// The launch as the spec takes it: a launcher's one process joins a group of one where
// dist.group_at_world_size_1 asks (it needs MASTER_ADDR then, as any group does).
LaunchEnv group_as_the_spec_asks(LaunchEnv env, const RunSpec& spec);

// The device this rank trains on: the spec's, except that data-parallel CUDA runs use
// cuda:LOCAL_RANK (one GPU per process).
torch::Device rank_device(const RunSpec& spec, const LaunchEnv& env);

// The local address Gloo binds where GLOO_SOCKET_IFNAME does not choose one, and why, when that
// needs saying.
struct GlooBinding {
  std::string address;  // empty: Gloo's default device (the address this host's name resolves to)
  std::string warning;  // empty: nothing to say
};
// Loopback when MASTER_ADDR is a loopback address; else this host's address on its route to rank
// 0 (`route_to_master`, empty where none was found). That route is loopback on rank 0's own host
// when MASTER_ADDR is that host's name and /etc/hosts maps it to 127.0.1.1, as Debian's does:
// where the launcher says ranks run on other hosts, which cannot reach it there, the ranks on that
// host bind the first of its other addresses (`host_addresses`: non-loopback addresses of
// interfaces up and running) instead, and say so.
GlooBinding choose_gloo_binding(const LaunchEnv& env, const std::string& route_to_master,
                                const std::vector<std::string>& host_addresses);
bool is_loopback_address(const std::string& address);  // "localhost", "::1", 127.0.0.0/8

// Which collective backends this build has: {"gloo", "nccl"} where their headers were found.
std::vector<std::string> available_backends();

// ---- the process group ----------------------------------------------------------------------

class PeerStore;

// One rank's membership of the group: the TCPStore (rank 0 hosts it) and the backend.
class Communicator {
 public:
  // dist.heartbeat_timeout_s's default: fifteen beats missed, where a live rank beats every second
  // whatever its main thread is doing.
  static constexpr std::chrono::milliseconds kDefaultHeartbeatTimeout{15000};

  // Rendezvous and backend start-up. Throws a run_failed Error naming the address and
  // dist.timeout_s when the peers do not all arrive in time. `heartbeat_timeout`: how long a
  // rank's heartbeat may stand still before it is given up on (0: never; see FailureWatch).
  // `stall_timeout`: how long a rank may stay in work of its own while another waits for it in a
  // collective, its heartbeat beating (0: until dist.timeout_s, when it is named as the cause).
  static std::unique_ptr<Communicator> connect(const LaunchEnv& env, const torch::Device& device,
                                               std::chrono::milliseconds timeout,
                                               std::chrono::milliseconds heartbeat_timeout = kDefaultHeartbeatTimeout,
                                               std::chrono::milliseconds stall_timeout = std::chrono::milliseconds(0));
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  const LaunchEnv& launch() const;
  int rank() const;
  int world_size() const;
  const std::string& backend() const;  // "gloo" or "nccl"
  std::chrono::milliseconds timeout() const;
  std::chrono::milliseconds heartbeat_timeout() const;  // 0: off

  // Overwrites `tensors` with rank 0's values on every rank (one flat broadcast per dtype).
  // Throws CommFailure.
  void broadcast_from_rank0(const std::vector<torch::Tensor>& tensors);
  // Starts an in-place sum all-reduce of a contiguous tensor and returns at once.
  void allreduce_async(const torch::Tensor& flat);
  // Every all-reduce started since the last call is done once this returns, in stream order.
  // Gloo: the host waits for them and a failed one, or one past the timeout, throws CommFailure.
  // NCCL: the device's current stream waits for them and the host goes on, as DDP's does; the
  // gradient sync awaits them later with the timeout (NCCL's watchdog only after a minute more).
  void wait_all();

  // A rank that fails for a reason of its own (not a lost peer) tells the others through the
  // store, so that each stops at its next wait with that error (PeerFailed) instead of waiting out
  // dist.timeout_s in a collective the failed rank will never join. The first announcement is the
  // cause the others report. Never throws: a store that is gone already tells the peers.
  void announce_failure(const std::string& error);
  // The same with an exception's message (LibTorch's without its backtrace).
  void announce_failure(const std::exception& e);
  // The first failure any rank announced; nullopt while there is none, or when the store did not
  // answer within a second.
  std::optional<RankFailure> announced_failure();
  // Throws PeerFailed, naming `during` and the first announced failure another rank made, if the
  // failure watch (src/dist/failure_watch.cpp) has seen one. Never waits on the store.
  void throw_if_a_peer_failed(const std::string& during);
  // The store's host (rank 0, unless torchrun's agent hosts it) failing before training: the store
  // ends with this process, so it waits up to `wait` until every other rank has read the
  // announcement (or made one of its own). At once elsewhere.
  void linger_until_peers_know(std::chrono::milliseconds wait);
  // A wait outside this class reached dist.timeout_s in a collective: throws PeerFailed where a
  // peer announced a failure, or where the rank it waited for was stuck in work of its own (its
  // watcher names it then), CommFailure otherwise. As any wait that gives up, it aborts an NCCL
  // group at once, and leaves a Gloo one to the process's end, since destroying it would wait for
  // that collective.
  [[noreturn]] void collective_timed_out(const std::string& during);
  // Where this rank's host is in its run ("epoch 1 step 41"), for the rank that watches it: a
  // rank that stays in one place while the others wait for it in a collective is named.
  void note_progress(const std::string& where);
  // This rank gave up on a collective (a wait above, or collective_timed_out): any later one is
  // behind it in the backend's queue and will not finish either.
  bool gave_up() const;
  // How often a rank waiting on a collective looks for an announced failure.
  static constexpr std::chrono::milliseconds kFailureCheckInterval{100};

  // The rendezvous store as the ranks read one another there: every rank's report at the end,
  // and what rank 0 reads of a peer that has not reported (peer_reports.hpp).
  PeerStore peers();
  // The collectives this rank has started; and, for a wait outside this class, the number of the
  // latest one it waits for (its watcher compares its neighbour's count with that).
  int64_t collectives_started() const;
  void note_waiting_on(int64_t awaited);

 private:
  struct Impl;
  explicit Communicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ---- gradient sync ----------------------------------------------------------------------------

// Broadcasts rank 0's parameters and buffers, then returns the GradientSync the trainer calls: the
// trainable parameters in reverse order, packed into buckets of ~dist.bucket_mb, each bucket's
// all-reduce started from an autograd hook as soon as its last gradient has been accumulated, so
// communication overlaps the rest of backward. Throws a run_failed Error if the broadcast fails.
std::unique_ptr<GradientSync> make_gradient_sync(Communicator& comm, torch::nn::Module& model, const DistSpec& spec);

// The stop requests that travel with the gradients (summed over ranks: non-zero when any rank
// asked), read in the order they were reduced. The newest `lag` stay unread: on a GPU a request
// reaches the host by an asynchronous copy behind its all-reduce, and reading it at once would
// make the host wait for the step it has just queued. Every rank reads the same requests at the
// same points, so every rank agrees before the same step.
class StopRequests {
 public:
  explicit StopRequests(std::size_t lag) : lag_(lag) {}
  // `sum` is on the host, or will be once `arrived` (empty: already there) returns.
  void add(torch::Tensor sum, std::function<void()> arrived = {});
  // Reads every request but the newest `lag`; true from the first non-zero one on.
  bool agreed();
  // Reads them all (the epoch's end: the device is awaited anyway).
  bool read_all();

 private:
  bool read_down_to(std::size_t unread);
  struct Request {
    torch::Tensor sum;
    std::function<void()> arrived;
  };
  std::deque<Request> unread_;
  std::size_t lag_;
  bool agreed_ = false;
};

// ---- results ----------------------------------------------------------------------------------

// What this rank reports to rank 0 at the end: host, device, status and its steady-state step and
// communication-wait spreads.
RankReport rank_report(const Communicator& comm, const torch::Device& device, const TrainRun& run,
                       const GradientSync* sync);

// How a rank other than 0 ends: hands its report to rank 0 through the store (a failure to do so
// is logged, not thrown: rank 0 may be gone), logs its outcome and returns its exit code. It
// writes no file.
ExitCode finish_peer_rank(Communicator& comm, const torch::Device& device, const TrainRun& run,
                          const GradientSync* sync);

// Rank 0: gathers the other ranks' reports (waiting up to dist.timeout_s when this rank
// completed, a few seconds when it failed, since the rank that broke the run may never report)
// into the result's `dist` section, rank 0's own first. make_global() then turns the summary
// into the run's global view. `stop` (the run's Ctrl-C flag; null: none) ends the wait early, the
// ranks not yet reported listed as missing.
DistSection gather_rank_reports(Communicator& comm, const RunSpec& spec, RankReport own, const GradientSync* sync,
                                const std::atomic<bool>* stop = nullptr);

// Test and debugging aid: the trainable parameters, in named_parameters() order, as raw
// little-endian float32 (written atomically). Ranks that trained in lockstep write identical files.
void write_parameters(const torch::nn::Module& model, const std::string& path);

}  // namespace tbench
