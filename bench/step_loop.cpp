// The training step with the harness taken away: the same model, synthetic batches, AdamW,
// clipping, LR schedule and CPU allocator as `tbench run`, in a bare loop that keeps only one clock
// read per step in a preallocated vector. The batches are collated before the loop. No loader
// thread, no records, no JSONL stream, no progress line, no per-step error handling.
// bench/harness_overhead.py runs it against `tbench run` on the same spec: the difference in
// median step time is what the harness costs.
//
//   build/tbench_step_loop MODEL SEQ_LEN BATCH STEPS WARMUP THREADS caching|system
// prints one JSON object: the median, p10 and p90 of the timed steps, in seconds.
#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tbench/data/data.hpp"
#include "tbench/env/cpu_allocator.hpp"
#include "tbench/models/classifier.hpp"
#include "tbench/models/model_config.hpp"
#include "tbench/timing/stats.hpp"
#include "tbench/train/optimizer.hpp"
#include "tbench/train/trainer.hpp"

int main(int argc, char** argv) {
  if (argc != 8) {
    std::cerr << "usage: tbench_step_loop MODEL SEQ_LEN BATCH STEPS WARMUP THREADS caching|system\n";
    return 2;
  }
  using namespace tbench;
  const std::string model_name = argv[1];
  const int64_t seq_len = std::atoll(argv[2]), batch = std::atoll(argv[3]);
  const int64_t steps = std::atoll(argv[4]), warmup = std::atoll(argv[5]), threads = std::atoll(argv[6]);
  const std::string allocator = argv[7];
  if ((allocator != "caching" && allocator != "system") || steps < 1 || warmup < 0 || warmup >= steps) {
    std::cerr << "tbench_step_loop: want STEPS > WARMUP >= 0 and caching or system\n";
    return 2;
  }
  const bool caching = allocator == "caching";

  torch::set_num_threads(static_cast<int>(threads));
  if (caching) install_caching_cpu_allocator(default_cpu_cache_limit());
  torch::manual_seed(42);
  const ModelConfig config = shipped_model_config(model_name);
  auto model = build_classifier(config, 2);
  model->train();

  SyntheticOptions data;
  data.num_samples = batch * steps;
  data.seq_len = seq_len;
  data.vocab_size = config.vocab_size;
  data.pad_token_id = config.pad_token_id;
  data.seed = 42;
  const TokenizedSamples samples = make_synthetic_samples(data);
  CollateOptions collate_options;  // every sample is seq_len long: no padding, on either side
  collate_options.seq_len = seq_len;
  collate_options.pad_id = config.pad_token_id;

  std::vector<torch::Tensor> params;
  for (const auto& p : model->parameters()) params.push_back(p);
  AdamWSettings settings;
  settings.lr = 5e-5;
  auto optimizer = make_adamw(OptimizerImpl::automatic, {{params, 0.0}}, settings, torch::kCPU, false);

  // Every batch is collated before the clock starts: the timed loop is the step's compute only.
  std::vector<Batch> batches;
  std::vector<int64_t> indices(static_cast<std::size_t>(batch));
  for (int64_t step = 0; step < steps; ++step) {
    std::iota(indices.begin(), indices.end(), step * batch);
    batches.push_back(collate(samples, indices, collate_options));
  }

  std::vector<double> seconds;
  seconds.reserve(static_cast<std::size_t>(steps));
  for (int64_t step = 0; step < steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    const Batch& b = batches[static_cast<std::size_t>(step)];
    optimizer->set_lr(linear_schedule_lr(settings.lr, step, 0, steps));
    const auto logits = model->forward(b.inputs);
    torch::nn::functional::cross_entropy(logits, b.labels).backward();
    clip_gradients(params, 1.0);
    optimizer->step();
    model->zero_grad(/*set_to_none=*/true);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  const std::vector<double> timed(seconds.begin() + warmup, seconds.end());
  nlohmann::json out = {{"implementation", "tbench_step_loop"}, {"model", model_name}, {"seq_len", seq_len},
                        {"batch_size", batch}, {"threads", threads}, {"allocator", caching ? "caching" : "system"},
                        {"warmup_steps", warmup}, {"step_seconds", timed}};
  const Spread s = spread(timed);
  out["median_step_seconds"] = s.median;
  out["p10_step_seconds"] = s.p10;
  out["p90_step_seconds"] = s.p90;
  std::cout << out.dump(1) << "\n";
  return 0;
}
