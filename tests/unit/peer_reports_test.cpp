// Rank 0's gather of the other ranks' reports (await_peer_reports): which reports it keeps, and
// when it stops waiting for a rank whose report can no longer come. The peers are played on a
// store of the test's own: each beats its heartbeat from a thread, as a rank's failure watch does.
#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "tbench/dist/failure_watch.hpp"
#include "tbench/dist/peer_reports.hpp"
#include "tbench/json_text.hpp"
#include "tbench/results/result.hpp"
#include "tbench/timing/clock.hpp"

namespace tbench {
namespace {

using std::chrono::milliseconds;

// One peer rank as rank 0 sees it in the store: a heartbeat that beats (every 250 ms, until
// stopped), its progress, its announced failure, its release of the store and its report.
class PlayedRank {
 public:
  PlayedRank(c10::intrusive_ptr<c10d::Store> store, int rank) : store_(std::move(store)), rank_(rank) {
    beats_ = std::thread([this] {
      while (!ended_) {
        if (beating_) store_->add(heartbeat_key(rank_), 1);
        std::this_thread::sleep_for(milliseconds(250));
      }
    });
  }
  ~PlayedRank() {
    ended_ = true;
    beats_.join();
  }
  PlayedRank(const PlayedRank&) = delete;
  PlayedRank& operator=(const PlayedRank&) = delete;

  void stop_beating() { beating_ = false; }
  void announce(const std::string& error) { write_failure(*store_, rank_, error); }
  void release() { store_->set(released_key(rank_), std::vector<uint8_t>{'1'}); }
  void move() {
    ++moves_;
    publish_progress(*store_, rank_, {moves_, 3, "epoch 1 step " + std::to_string(moves_)});
  }
  void report() {
    RankReport report;
    report.rank = rank_;
    report.steps = 10 + rank_;
    PeerStore(*store_).publish(report_key(rank_), json_text(to_json(report)));
  }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  int rank_;
  int64_t moves_ = 0;
  std::atomic<bool> beating_{true}, ended_{false};
  std::thread beats_;
};

// Runs `play` on a thread of its own while rank 0 gathers; returns what it gathered, and how long
// that took in `took_s`. A `stop` set is the user's Ctrl-C.
template <typename Play>
GatheredReports gather(c10d::Store& store, int world_size, milliseconds silence_limit, double deadline_s,
                       Play play, double& took_s, const std::atomic<bool>* stop = nullptr) {
  std::thread peers(play);
  PeerStore reads(store);
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(deadline_s));
  GatheredReports gathered = await_peer_reports(reads, world_size, silence_limit, deadline, stop);
  took_s = seconds_since(start);
  peers.join();
  return gathered;
}

std::vector<int64_t> ranks_of(const std::vector<RankReport>& reports) {
  std::vector<int64_t> ranks;
  for (const auto& r : reports) ranks.push_back(r.rank);
  return ranks;
}

const auto sleep_s = [](double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); };

TEST(PeerReports, KeepsEveryReportInRankOrderAsTheyArrive) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  PlayedRank one(store, 1), two(store, 2), three(store, 3);
  double took = 0;
  const auto gathered = gather(*store, 4, milliseconds(15000), 20, [&] {
    three.report();
    two.report();
    sleep_s(0.4);
    one.report();
  }, took);
  ASSERT_EQ(ranks_of(gathered.reports), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(gathered.reports[0].steps, 11);
  EXPECT_TRUE(gathered.missing.empty());
  EXPECT_FALSE(gathered.store_gone);
  EXPECT_LT(took, 2.0) << "it waited on after the last report";
}

// A rank that announced nothing and whose heartbeat stopped is gone once the silence limit is up,
// not at the deadline; with no limit (dist.heartbeat_timeout_s 0) only the deadline ends the wait.
TEST(PeerReports, ARankWhoseHeartbeatStoppedIsGivenUpOnAtTheSilenceLimit) {
  for (const milliseconds limit : {milliseconds(2000), milliseconds(0)}) {
    auto store = c10::make_intrusive<c10d::HashStore>();
    PlayedRank one(store, 1), two(store, 2);
    double took = 0;
    const double deadline_s = limit.count() > 0 ? 20 : 4;
    const auto gathered = gather(*store, 3, limit, deadline_s, [&] {
      one.report();
      two.stop_beating();
    }, took);
    EXPECT_EQ(ranks_of(gathered.reports), (std::vector<int64_t>{1}));
    EXPECT_EQ(gathered.missing, (std::vector<int64_t>{2}));
    if (limit.count() > 0) {
      EXPECT_EQ(gathered.silent, (std::vector<int64_t>{2}));
      EXPECT_GT(took, 2.0) << "given up on before the silence limit";
      EXPECT_LT(took, 6.0) << "waited on for a rank whose heartbeat had stopped";
    } else {
      EXPECT_TRUE(gathered.silent.empty());
      EXPECT_GT(took, deadline_s);
    }
  }
}

// A rank that announced its own failure reports after that, beating meanwhile, however long it
// takes: its report counts. One that announced and then stopped beating is gone after the grace.
TEST(PeerReports, ARankThatAnnouncedItsFailureIsAwaitedWhileItBeats) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  PlayedRank slow(store, 1), dead(store, 2);
  double took = 0;
  const auto gathered = gather(*store, 3, milliseconds(15000), 20, [&] {
    slow.announce("its disk is full");
    dead.announce("out of memory");
    dead.stop_beating();
    sleep_s(4.5);  // past the grace: the beating rank is still awaited
    slow.report();
  }, took);
  EXPECT_EQ(ranks_of(gathered.reports), (std::vector<int64_t>{1}));
  EXPECT_EQ(gathered.missing, (std::vector<int64_t>{2}));
  EXPECT_EQ(gathered.failed, (std::vector<int64_t>{2}));
  EXPECT_TRUE(gathered.silent.empty() && gathered.stuck.empty());
  EXPECT_LT(took, 8.0);
}

// Ctrl-C while rank 0 waits for a peer that beats on without reporting ends the wait, long
// before the deadline: the peer is missing and the gather says it was stopped.
TEST(PeerReports, AStopRequestEndsTheWait) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  PlayedRank beating(store, 1);
  std::atomic<bool> stop{false};
  double took = 0;
  const auto gathered = gather(*store, 2, milliseconds(15000), 30, [&] {
    sleep_s(0.5);
    stop = true;
  }, took, &stop);
  EXPECT_TRUE(gathered.stopped);
  EXPECT_EQ(gathered.missing, (std::vector<int64_t>{1}));
  EXPECT_TRUE(gathered.silent.empty() && gathered.stuck.empty() && gathered.failed.empty());
  EXPECT_LT(took, 10.0) << "waited on after the stop";
}

// A rank its watcher announced silent may have been paused: if it comes back within the grace,
// its report still counts.
TEST(PeerReports, ARankAnnouncedSilentThatComesBackWithinTheGraceStillReports) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  PlayedRank paused(store, 1);
  double took = 0;
  const auto gathered = gather(*store, 2, milliseconds(15000), 20, [&] {
    paused.stop_beating();
    paused.announce(silent_rank_error(0, milliseconds(15000)));
    sleep_s(1.5);
    paused.report();
  }, took);
  EXPECT_EQ(ranks_of(gathered.reports), (std::vector<int64_t>{1}));
  EXPECT_TRUE(gathered.missing.empty());
  EXPECT_TRUE(gathered.silent.empty());
}

// A rank announced stuck beats on. Once it has read its fate (released the store) and its host
// has stood still past the grace it is given up on, long before the deadline; until it has read
// it, rank 0 (which hosts the store it reads) waits, to the deadline if need be.
TEST(PeerReports, AStuckRankIsGivenUpOnOnceItReadItsFateAndStandsStill) {
  for (const bool reads_its_fate : {true, false}) {
    auto store = c10::make_intrusive<c10d::HashStore>();
    PlayedRank stuck(store, 1);
    double took = 0;
    const double deadline_s = reads_its_fate ? 30 : 6;
    const auto gathered = gather(*store, 2, milliseconds(15000), deadline_s, [&] {
      stuck.move();
      stuck.announce(stuck_rank_error(0, "epoch 1 step 1", milliseconds(9000)));
      sleep_s(1.0);
      if (reads_its_fate) stuck.release();
    }, took);
    EXPECT_TRUE(gathered.reports.empty());
    EXPECT_EQ(gathered.stuck, (std::vector<int64_t>{1})) << "reads its fate: " << reads_its_fate;
    if (reads_its_fate) {
      EXPECT_GT(took, 3.0) << "given up on before its progress stood still past the grace";
      EXPECT_LT(took, 8.0) << "waited on for a stuck rank that had read its fate";
    } else {
      EXPECT_GT(took, deadline_s) << "given up on before it could read its fate";
    }
  }
}

// A rank announced stuck whose host moves on (a write that returned late) reaches its next wait,
// stops there and reports: rank 0 waits for it while it moves, though it released the store.
TEST(PeerReports, AStuckRankWhoseHostMovesOnIsAwaitedAndItsReportKept) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  PlayedRank late(store, 1);
  double took = 0;
  const auto gathered = gather(*store, 2, milliseconds(15000), 30, [&] {
    late.announce(stuck_rank_error(0, "epoch 1 step 1", milliseconds(9000)));
    late.release();
    for (int i = 0; i < 10; ++i) {  // 5 s of moving: past the grace
      late.move();
      sleep_s(0.5);
    }
    late.report();
  }, took);
  EXPECT_EQ(ranks_of(gathered.reports), (std::vector<int64_t>{1}));
  EXPECT_TRUE(gathered.missing.empty() && gathered.stuck.empty());
}

// The store's host gone (torchrun's agent hosts it): nothing more can come, and the wait ends at
// once with every rank missing.
class GoneStore : public c10d::HashStore {
 public:
  int64_t add(const std::string&, int64_t) override { throw std::runtime_error("Connection reset by peer"); }
  bool check(const std::vector<std::string>&) override { throw std::runtime_error("Connection reset by peer"); }
  std::vector<uint8_t> get(const std::string&) override { throw std::runtime_error("Connection reset by peer"); }
};

TEST(PeerReports, AStoreThatIsGoneEndsTheWaitAtOnce) {
  GoneStore store;
  double took = 0;
  const auto gathered = gather(store, 3, milliseconds(15000), 20, [] {}, took);
  EXPECT_TRUE(gathered.store_gone);
  EXPECT_EQ(gathered.missing, (std::vector<int64_t>{1, 2}));
  EXPECT_LT(took, 1.0);
}

}  // namespace
}  // namespace tbench
