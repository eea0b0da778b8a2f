// The process group on c10d: a TCPStore for the rendezvous (rank 0 hosts it), and Gloo (CPU) or
// NCCL (CUDA) for the collectives. Each backend compiles only where CMake found its headers
// (TBENCH_WITH_GLOO, TBENCH_WITH_NCCL); the rest of tbench never sees a c10d type.
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>

#if TBENCH_WITH_GLOO
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

#if TBENCH_WITH_NCCL
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL
#endif
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "dist_internal.hpp"
#include "tbench/dist/dist.hpp"
#include "tbench/dist/failure_watch.hpp"
#include "tbench/dist/peer_reports.hpp"
#include "tbench/dist/tcp_store.hpp"
#include "tbench/env/torch_features.hpp"
#include "tbench/process_end.hpp"

namespace tbench {

c10::intrusive_ptr<c10d::TCPStore> open_tcp_store(const std::string& host, c10d::TCPStoreOptions options) {
#if TBENCH_HAS_TCPSTORE_LIBUV_OPTION
  try {
    return c10::make_intrusive<c10d::TCPStore>(host, options);
  } catch (const c10::Error& e) {
    if (!options.useLibUV || std::string(e.what()).find("libuv") == std::string::npos) throw;
    spdlog::debug("this LibTorch has no libuv: using the classic TCPStore");
    options.useLibUV = false;
  }
#endif
  return c10::make_intrusive<c10d::TCPStore>(host, options);
}

namespace {

using Millis = std::chrono::milliseconds;

// torch 2 split the process group into a front (ProcessGroup) and backends; Gloo and NCCL are
// Backends there, ProcessGroups in 1.13. Both spell the collectives the same way.
#if TORCH_VERSION_MAJOR >= 2
using Group = c10d::Backend;
#else
using Group = c10d::ProcessGroup;
#endif

#if TBENCH_WITH_GLOO
// This host's address on the route to `host`: the source address the kernel picks for a UDP
// "connection" to it (nothing is sent). Empty when `host` does not resolve or has no route.
std::string local_address_towards(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found) return "";
  std::string address;
  for (const addrinfo* a = found; a && address.empty(); a = a->ai_next) {
    const int s = ::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) continue;
    sockaddr_storage local{};
    socklen_t length = sizeof local;
    char text[INET6_ADDRSTRLEN] = {};
    if (::connect(s, a->ai_addr, a->ai_addrlen) == 0 &&
        ::getsockname(s, reinterpret_cast<sockaddr*>(&local), &length) == 0 &&
        ::getnameinfo(reinterpret_cast<sockaddr*>(&local), length, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0) {
      address = text;
    }
    ::close(s);
  }
  ::freeaddrinfo(found);
  return address;
}

// This host's addresses other than loopback, on interfaces up and running: IPv4 first, then IPv6
// other than link-local (which needs a scope to be reached).
std::vector<std::string> host_addresses() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return {};
  std::vector<std::string> v4, v6;
  for (const ifaddrs* i = list; i; i = i->ifa_next) {
    // Up and running (a bridge with nothing plugged in is up, not running).
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP) || !(i->ifa_flags & IFF_RUNNING) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    const int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    const socklen_t length = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    char text[INET6_ADDRSTRLEN] = {};
    if (::getnameinfo(i->ifa_addr, length, text, sizeof text, nullptr, 0, NI_NUMERICHOST) != 0) continue;
    const std::string address = text;
    if (family == AF_INET) {
      v4.push_back(address);
    } else if (address.rfind("fe80", 0) != 0) {
      v6.push_back(address);
    }
  }
  ::freeifaddrs(list);
  v4.insert(v4.end(), v6.begin(), v6.end());
  return v4;
}

// Which local interface Gloo binds: GLOO_SOCKET_IFNAME as in PyTorch; otherwise
// choose_gloo_binding's address: loopback when rank 0 is reached through it (all ranks on this
// machine), else this host's address on the route to rank 0. (The address the host's name
// resolves to, PyTorch's default, is often not one the other ranks can reach: a container's or a
// network namespace's hostname is the host's.)
std::vector<std::shared_ptr<::gloo::transport::Device>> gloo_devices(const LaunchEnv& env) {
  std::vector<std::shared_ptr<::gloo::transport::Device>> devices;
  if (const char* names = std::getenv("GLOO_SOCKET_IFNAME"); names && *names) {
    std::string list = names;
    for (std::size_t start = 0; start <= list.size();) {
      const auto comma = std::min(list.find(',', start), list.size());
      if (comma > start) devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(list.substr(start, comma - start)));
      start = comma + 1;
    }
  }
  if (!devices.empty()) return devices;
  const std::string route = is_loopback_address(env.master_addr) ? "" : local_address_towards(env.master_addr, env.master_port);
  const GlooBinding binding = choose_gloo_binding(env, route, is_loopback_address(route) ? host_addresses() : std::vector<std::string>{});
  if (!binding.warning.empty()) spdlog::warn("rank {}: {}", env.rank, binding.warning);
  devices.push_back(binding.address.empty() ? c10d::ProcessGroupGloo::createDefaultDevice()
                                            : c10d::ProcessGroupGloo::createDeviceForHostname(binding.address));
  return devices;
}
#endif

}  // namespace

// The backend's own timeout comes this long after dist.timeout_s: the host's deadline ends a wait
// first, and names the rank it waited for where that rank's watcher can (Impl::timed_out). Gloo
// gets it as its group's timeout too, in case an op keeps to that rather than its own; it also
// bounds Gloo's connections at start-up, which come once every rank has joined the store.
constexpr std::chrono::milliseconds kBackendGrace = std::chrono::minutes(1);
// Once a wait has timed out, how long the others' watchers have to name the rank it waited for.
// Each reads that a wait timed out (kWaitsTimedOutKey) at its next beat, a second at most, but
// names its neighbour only once its own reads have seen it stand still for kStuckAtTimeout: a
// watcher that began to wait (and to read) just before this wait timed out needs about that long
// and a beat more. A lost contact with no one to name is reported that much later, after a wait
// of dist.timeout_s.
constexpr std::chrono::milliseconds kTimeoutVerdictWait = kStuckAtTimeout + 2 * kHeartbeatInterval;

struct Communicator::Impl {
  LaunchEnv env;
  Millis timeout{0};
  std::string backend;
  bool cuda = false;
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<Group> group;
  std::mutex mutex;  // pending is filled from autograd's thread and drained from the main thread
  struct Pending {
    int64_t number;  // the collective's, from FailureWatch::note_collective
    c10::intrusive_ptr<c10d::Work> work;
  };
  std::vector<Pending> pending;

  std::unique_ptr<FailureWatch> watch;  // over a store connection of its own
#if TBENCH_WITH_NCCL
  c10d::ProcessGroupNCCL* nccl = nullptr;  // `group`, where it is NCCL's
#endif
  // A wait gave up on a collective: the backend's threads may sit in it until its own timeout
  // (dist.timeout_s + kBackendGrace), and destroying the group joins them (Gloo) or waits for it (NCCL). Set from
  // the main thread and autograd's.
  std::atomic<bool> collective_abandoned{false};
  std::chrono::milliseconds heartbeat_timeout{0};

  // A group with a collective still in flight (abandoned, or left running by a failure of this
  // rank's own) must not wait for it: NCCL's is aborted, Gloo's is left to the process's end,
  // which is near: the result is written, and the rank exits with its error at once instead of
  // dist.timeout_s later.
  ~Impl() {
    if (!group || !(collective_abandoned || work_in_flight())) return;
#if TBENCH_WITH_NCCL
    if (nccl) {
      abort_nccl();
      return;
    }
#endif
    spdlog::debug("{}leaving the {} process group to the process's end (a collective is in flight)", prefix(), backend);
    (void)group.release();
    g_skip_static_destructors = true;
  }

  // This rank gives up on the collectives in flight. NCCL's are aborted at once: ncclCommAbort
  // ends their kernels, which the compute stream waits on, so the epoch's last wait for the
  // device, and the result after it, are not held until NCCL's watchdog kills the process.
  void abandon_collectives() {
    collective_abandoned = true;
    watch->note_progress("stopping: it gave up on a collective");  // its host is not stuck
#if TBENCH_WITH_NCCL
    if (nccl) abort_nccl();
#endif
  }

#if TBENCH_WITH_NCCL
  std::atomic<bool> nccl_aborted{false};
  void abort_nccl() {
    if (nccl_aborted.exchange(true)) return;
    try {
      nccl->abort();
    } catch (const std::exception& e) {
      spdlog::debug("{}aborting NCCL: {}", prefix(), error_text(e));
    }
  }
#endif

  bool work_in_flight() {
    std::lock_guard<std::mutex> lock(mutex);
    return std::any_of(pending.begin(), pending.end(), [](const Pending& p) { return p.work && !p.work->isCompleted(); });
  }

  std::string prefix() const { return "rank " + std::to_string(env.rank) + ": "; }
  bool hosts_store() const { return env.rank == 0 && !env.agent_store; }

  void throw_if_a_peer_failed(const std::string& during) {
    watch->note_interest();
    throw_for(watch->seen(), during);
  }

  void throw_for(const std::optional<RankFailure>& failure, const std::string& during) {
    if (!failure) return;
    // A failure in this rank's name that it did not announce: its watcher gave up on it (it was
    // stopped or cut off for the heartbeat's limit), and the others have stopped.
    const bool given_up_on = failure->rank == env.rank;
    if (given_up_on && watch->announced_own_failure()) return;  // its own error, which it is reporting already
    abandon_collectives();
    if (!hosts_store()) watch->release();  // it ends this rank before training, or its report follows at once
    throw PeerFailed(prefix() + "stopped during " + during + " because " +
                     (given_up_on ? "the other ranks gave up on it: " : "") + failure->describe());
  }

  // A peer's announced failure, where there is one, explains a lost contact better than the
  // backend's own words: a failed rank announces before it exits, and its exit closes the
  // connections, so the watch looks once more (for a second at most: the store may be cut off too).
  [[noreturn]] void lost_contact(const std::string& during, const std::string& detail) {
    abandon_collectives();
    throw_for(watch->look_now(std::chrono::seconds(1)), during);
    throw lost_contact_error(during, detail);
  }

  CommFailure lost_contact_error(const std::string& during, const std::string& detail) const {
    return CommFailure(prefix() + "lost contact with the other ranks during " + during + ": " + detail +
                       " (a peer failed, was killed or did not answer within dist.timeout_s = " +
                       std::to_string(timeout.count() / 1000) + " s; see its log)");
  }

  // A wait's dist.timeout_s is up. A rank that never started the collective while its process
  // lived was stuck in work of its own: its watcher names it now (this rank's watch, where it
  // watches that rank; another rank's at its next beat, once it reads that this wait timed out,
  // however much later its own wait began), and that is the cause every rank reports, not a lost
  // contact.
  // The verdict comes before this rank gives up on the collective: giving up aborts NCCL, which
  // would end the others' waits with a lost contact before their watchers could name anyone.
  [[noreturn]] void timed_out(const std::string& during) {
    auto failure = watch->look_now(std::chrono::seconds(1), /*wait_timed_out=*/true);
    const auto until = std::chrono::steady_clock::now() + kTimeoutVerdictWait;
    while (!failure && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      failure = watch->look_now(std::chrono::seconds(1), /*wait_timed_out=*/true);
    }
    abandon_collectives();
    throw_for(failure, during);
    throw lost_contact_error(during, "it did not finish within dist.timeout_s");
  }

  // The host waits until the work is done, with dist.timeout_s as its deadline, looking for an
  // announced failure every kFailureCheckInterval.
  // `number`: the collective's (its watcher compares it with the neighbour's count).
  void wait(const c10::intrusive_ptr<c10d::Work>& work, int64_t number, const std::string& during) {
    watch->note_waiting_on(number);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (wait_a_while(work, during)) return;
      throw_if_a_peer_failed(during);
      if (std::chrono::steady_clock::now() > deadline) timed_out(during);
    }
  }

  // True once the work is done; false when it is still running after about kFailureCheckInterval.
  bool wait_a_while(const c10::intrusive_ptr<c10d::Work>& work, const std::string& during) {
    if (cuda) {
      // NCCL's wait with a timeout may abort the communicator when it expires: poll instead, then
      // wait() makes the current stream wait for the finished work (or rethrows its error).
      const auto until = std::chrono::steady_clock::now() + Communicator::kFailureCheckInterval;
      while (!work->isCompleted()) {
        if (std::chrono::steady_clock::now() > until) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      try {
        work->wait();
      } catch (const std::exception& e) {
        lost_contact(during, error_text(e));
      }
      return true;
    }
    try {
      work->wait(Communicator::kFailureCheckInterval);  // Gloo's work ends on a condition variable
      return true;
    } catch (const std::exception&) {
      // wait() with a timeout throws while the work still runs (and the work may finish just
      // after): a finished work's own wait says whether it failed.
      if (!work->isCompleted()) return false;
    }
    try {
      work->wait();
    } catch (const std::exception& e) {
      lost_contact(during, error_text(e));
    }
    return true;
  }

  // NCCL: only the current stream waits for the work (wait() without a timeout); the host goes on.
  void queue_wait(const c10::intrusive_ptr<c10d::Work>& work, const std::string& during) {
    try {
      work->wait();
    } catch (const std::exception& e) {
      lost_contact(during, error_text(e));
    }
  }
};

Communicator::Communicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

const LaunchEnv& Communicator::launch() const { return impl_->env; }
int Communicator::rank() const { return impl_->env.rank; }
int Communicator::world_size() const { return impl_->env.world_size; }
const std::string& Communicator::backend() const { return impl_->backend; }
std::chrono::milliseconds Communicator::timeout() const { return impl_->timeout; }
std::chrono::milliseconds Communicator::heartbeat_timeout() const { return impl_->heartbeat_timeout; }

std::unique_ptr<Communicator> Communicator::connect(const LaunchEnv& env, const torch::Device& device,
                                                    std::chrono::milliseconds timeout,
                                                    std::chrono::milliseconds heartbeat_timeout,
                                                    std::chrono::milliseconds stall_timeout) {
  auto impl = std::make_unique<Impl>();
  impl->env = env;
  impl->timeout = timeout;
  impl->heartbeat_timeout = heartbeat_timeout;
  impl->cuda = device.is_cuda();
  impl->backend = impl->cuda ? "nccl" : "gloo";
  const std::string address = env.master_addr + ":" + std::to_string(env.master_port);
  const long seconds = static_cast<long>(timeout.count() / 1000);
  spdlog::info("rank {}/{} ({}): rendezvous at {}, {} backend, timeout {} s", env.rank, env.world_size,
               to_string(env.launcher), address, impl->backend, seconds);

  // Rank 0 hosts the store (unless torchrun's agent does); every connection is a client of it.
  const auto open_store = [&](bool host) -> c10::intrusive_ptr<c10d::Store> {
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(env.master_port);
    options.isServer = host;
    options.numWorkers = static_cast<std::size_t>(env.world_size);
    options.waitWorkers = false;  // joined below, with a message that says how many arrived
    options.timeout = timeout;
    c10::intrusive_ptr<c10d::Store> store = open_tcp_store(env.master_addr, options);
    if (env.agent_store) store = c10::make_intrusive<c10d::PrefixStore>(env.store_prefix, store);
    return store;
  };
  try {
    impl->store = open_store(impl->hosts_store());
  } catch (const std::exception& e) {
    const std::string host = env.agent_store ? "torchrun's agent hosts the store there"
                             : env.rank == 0 ? "this rank hosts the store there: is MASTER_PORT free?"
                                             : "rank 0 hosts the store there: is it running, and are MASTER_ADDR and "
                                               "MASTER_PORT right?";
    throw CommFailure(impl->prefix() + "rendezvous at " + address + " failed: " + error_text(e) + " (" + host +
                      " dist.timeout_s = " + std::to_string(seconds) + " s)");
  }
  // Every rank counts itself in, then waits until all have: a rank that never starts ends the
  // others here, at the timeout, naming how many arrived.
  try {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int64_t joined = impl->store->add("tbench/joined", 1);
    while (joined < env.world_size) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw CommFailure(impl->prefix() + "rendezvous at " + address + ": only " + std::to_string(joined) + " of " +
                          std::to_string(env.world_size) + " ranks joined within dist.timeout_s = " +
                          std::to_string(seconds) + " s; the others never started or cannot reach " + address);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      joined = impl->store->add("tbench/joined", 0);
    }
    impl->watch = std::make_unique<FailureWatch>(open_store(false), env.rank, watched_neighbour(env.rank, env.world_size),
                                                 heartbeat_timeout, stall_timeout);
    // A rank the others gave up on whose host then stays where it is for dist.timeout_s is stuck
    // where none of its waits can see it: the watch ends its process.
    impl->watch->end_process_when_abandoned(timeout);
  } catch (const CommFailure&) {
    throw;
  } catch (const std::exception& e) {
    throw CommFailure(impl->prefix() + "rendezvous at " + address + " failed: " + error_text(e) +
                      " (rank 0, which hosts the store, stopped?)");
  }

  try {
    if (!impl->cuda) {
#if TBENCH_WITH_GLOO
      auto options = c10d::ProcessGroupGloo::Options::create(timeout + kBackendGrace);
      options->devices = gloo_devices(env);
      impl->group = c10::make_intrusive<c10d::ProcessGroupGloo>(
          c10::make_intrusive<c10d::PrefixStore>("gloo", impl->store), env.rank, env.world_size, options);
#endif
    } else {
#if TBENCH_WITH_NCCL
      c10::cuda::set_device(static_cast<c10::DeviceIndex>(device.index()));
      auto options = c10d::ProcessGroupNCCL::Options::create();
      // The host awaits the gradients with dist.timeout_s (BucketedGradientSync) and so ends a
      // lost run with CommFailure and a failed result; the watchdog, which may kill the process,
      // is only the backstop (kBackendGrace).
      options->timeout = timeout + kBackendGrace;
      auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(
          c10::make_intrusive<c10d::PrefixStore>("nccl", impl->store), env.rank, env.world_size, options);
      impl->nccl = nccl.get();
      impl->group = std::move(nccl);
#endif
    }
  } catch (const std::exception& e) {
    throw CommFailure(impl->prefix() + impl->backend + " process group did not start: " + error_text(e));
  }
  if (!impl->group) {  // check_launch refuses this earlier; kept for callers that skip it
    throw Error(ExitCode::bad_input, impl->prefix() + "this build has no " + impl->backend + " backend");
  }
  spdlog::info("rank {}/{}: {} process group connected", env.rank, env.world_size, impl->backend);
  // From here on every line says which rank wrote it, and ranks other than 0 keep to warnings and
  // errors (unless debugging): rank 0 speaks for the run.
  spdlog::default_logger()->set_pattern("[%H:%M:%S] %^%l%$ [rank " + std::to_string(env.rank) + "] %v");
  if (env.rank != 0 && spdlog::get_level() == spdlog::level::info) spdlog::set_level(spdlog::level::warn);
  return std::unique_ptr<Communicator>(new Communicator(std::move(impl)));
}

void Communicator::broadcast_from_rank0(const std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  // One flat tensor per dtype, in a fixed order, so every rank issues the same broadcasts.
  std::map<c10::ScalarType, std::vector<torch::Tensor>> by_type;
  for (const auto& t : tensors) by_type[t.scalar_type()].push_back(t);
  for (auto& [type, group] : by_type) {
    std::vector<torch::Tensor> parts;
    for (const auto& t : group) parts.push_back(t.detach().reshape({-1}));
    std::vector<at::Tensor> io = {torch::cat(parts).contiguous()};
    c10d::BroadcastOptions options;
    options.rootRank = 0;
    options.timeout = impl_->timeout + kBackendGrace;
    c10::intrusive_ptr<c10d::Work> work;
    const int64_t number = impl_->watch->note_collective();
    try {
      work = impl_->group->broadcast(io, options);
    } catch (const std::exception& e) {
      impl_->lost_contact("the broadcast of rank 0's parameters", error_text(e));
    }
    impl_->wait(work, number, "the broadcast of rank 0's parameters");
    int64_t offset = 0;
    for (auto& t : group) {
      t.detach().copy_(io[0].narrow(0, offset, t.numel()).view_as(t));
      offset += t.numel();
    }
  }
}

void Communicator::allreduce_async(const torch::Tensor& flat) {
  std::vector<at::Tensor> io = {flat};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::SUM;
  options.timeout = impl_->timeout + kBackendGrace;
  c10::intrusive_ptr<c10d::Work> work;
  const int64_t number = impl_->watch->note_collective();
  try {
    work = impl_->group->allreduce(io, options);
  } catch (const std::exception& e) {
    impl_->lost_contact("a gradient all-reduce", error_text(e));
  }
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->pending.push_back({number, std::move(work)});
}

void Communicator::wait_all() {
  std::vector<Impl::Pending> pending;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    pending.swap(impl_->pending);
  }
  for (const auto& p : pending) {
    if (impl_->cuda) {
      impl_->queue_wait(p.work, "a gradient all-reduce");
    } else {
      impl_->wait(p.work, p.number, "a gradient all-reduce");
    }
  }
}

void Communicator::announce_failure(const std::string& error) {
  impl_->watch->note_own_failure();
  try {
    write_failure(*impl_->store, rank(), error);
  } catch (const std::exception& e) {
    spdlog::debug("{}could not announce this rank's failure (the store's host may be gone): {}", impl_->prefix(),
                  error_text(e));
  }
}

void Communicator::announce_failure(const std::exception& e) { announce_failure(error_text(e)); }

std::optional<RankFailure> Communicator::announced_failure() {
  return impl_->watch->look_now(std::chrono::seconds(1));
}

void Communicator::throw_if_a_peer_failed(const std::string& during) { impl_->throw_if_a_peer_failed(during); }

bool Communicator::gave_up() const { return impl_->collective_abandoned; }

void Communicator::collective_timed_out(const std::string& during) { impl_->timed_out(during); }

void Communicator::note_progress(const std::string& where) { impl_->watch->note_progress(where); }

void Communicator::linger_until_peers_know(std::chrono::milliseconds wait) {
  if (!impl_->hosts_store() || world_size() < 2) return;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  try {
    for (;;) {
      // Every other rank has released the store (it read the failure that ends it), announced a
      // failure of its own, or was announced silent (it cannot read; one announced stuck can).
      std::set<int> done;
      for (const auto& failure : read_failures(*impl_->store)) {
        if (failure.rank != rank() && !is_stuck_rank_error(failure.error)) done.insert(static_cast<int>(failure.rank));
      }
      for (int r = 0; r < world_size(); ++r) {
        if (r != rank() && !done.count(r) && impl_->store->check({released_key(r)})) done.insert(r);
      }
      if (static_cast<int>(done.size()) >= world_size() - 1 || std::chrono::steady_clock::now() > deadline) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  } catch (const std::exception& e) {
    spdlog::debug("{}{}", impl_->prefix(), error_text(e));
  }
}

PeerStore Communicator::peers() { return PeerStore(*impl_->store); }

int64_t Communicator::collectives_started() const { return impl_->watch->collectives_started(); }

void Communicator::note_waiting_on(int64_t awaited) { impl_->watch->note_waiting_on(awaited); }

}  // namespace tbench
