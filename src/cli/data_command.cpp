// `tbench data SPEC`: what the spec's data looks like to the model — sample and token counts,
// the length spread, labels, and the padding efficiency each batching choice would give, with the
// training FLOPs per sample under each as a run counts them, and under model.unpad (not for
// XLNet's permutation LM) — and
// `--histogram FILE`, the length histogram that `data.lengths.histogram` reads, so synthetic
// data can be shaped like the user's own.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>

#include "tbench/cli/commands.hpp"
#include "tbench/data/data_sources.hpp"
#include "tbench/models/model_cost.hpp"
#include "tbench/files.hpp"
#include "tbench/results/result_files.hpp"
#include "tbench/run/batch_flops.hpp"
#include "tbench/run/runner.hpp"
#include "tbench/timing/stats.hpp"
#include "tbench/json_text.hpp"

namespace tbench {
namespace {

using nlohmann::json;

struct DataOptions {
  std::string spec_path;
  std::vector<std::string> overrides;
  std::string histogram_path;
  bool as_json = false;
};

DataOptions g_data;

// One epoch planned the way a run would plan it, with each micro-batch padded by `padding`: the
// tokens the samples hold, the tokens computed, and the training FLOPs of the models as a run's
// steps count them (BatchFlops).
struct EpochWork {
  double real_tokens = 0, computed_tokens = 0, train_flops = 0, samples = 0;

  double padding_efficiency() const { return computed_tokens > 0 ? real_tokens / computed_tokens : 0.0; }
  double train_flops_per_sample() const { return samples > 0 ? train_flops / samples : 0.0; }
};

// The models whose work a run of the spec counts: the trained one and, for distillation, its teacher.
struct RunModels {
  ModelConfig model;
  std::optional<ModelConfig> teacher;

  const ModelConfig* teacher_or_null() const { return teacher ? &*teacher : nullptr; }
};

RunModels run_models(const RunSpec& spec) {
  RunModels models{model_config_for(spec), std::nullopt};
  if (spec.task == Task::distillation) models.teacher = teacher_config_for(spec);
  return models;
}

// Sparse prediction's head runs at the masked positions: `tbench data` counts the first epoch's
// masks, drawn as the run draws them (seeded per sample and epoch).
bool draws_masks(const RunSpec& spec) { return task_work(spec, nullptr).sparse_prediction; }

EpochWork epoch_work(const PreparedData& data, const RunSpec& spec, Padding padding, bool bucketed,
                     const RunModels& models) {
  const TokenizedSamples& samples = data.train;
  CollateOptions collate_options = data.collate;
  collate_options.padding = padding;
  TrainerConfig trainer = trainer_config(spec, LaunchEnv{});  // one process: how one epoch is batched
  trainer.bucket_by_length = bucketed;
  BatchFlops batch_flops(spec, models.model, models.teacher_or_null());
  const bool masks = draws_masks(spec);
  const int64_t epoch = 1;
  EpochWork work;
  for_each_planned_micro_batch(samples, sampler_options(trainer, 1, 0), collate_options, epoch,
                               [&](const PlannedMicroBatch& micro) {
    const auto& lengths = micro.lengths;
    work.real_tokens += static_cast<double>(std::accumulate(lengths.begin(), lengths.end(), int64_t{0}));
    work.computed_tokens += static_cast<double>(micro.width) * static_cast<double>(lengths.size());
    work.samples += static_cast<double>(lengths.size());
    work.train_flops += masks ? batch_flops(collate(samples, micro.indices, collate_options, epoch))
                              : batch_flops(micro.width, lengths);
  });
  return work;
}

std::map<int64_t, int64_t> length_histogram(const PreparedData& data) {
  std::map<int64_t, int64_t> histogram;
  for (const auto* part : {&data.train, &data.eval}) {
    for (int64_t i = 0; i < part->size(); ++i) ++histogram[part->length(i)];
  }
  return histogram;
}

std::string histogram_text(const std::map<int64_t, int64_t>& histogram, const RunSpec& spec) {
  std::string text = "# tbench data: sample lengths of " + (spec.data.path.empty() ? std::string(to_string(spec.data.source)) : spec.data.path) +
                     " in tokens (special tokens included, truncated to seq_len " + std::to_string(spec.data.seq_len) +
                     ")\n# length count\n";
  for (const auto& [length, count] : histogram) text += std::to_string(length) + " " + std::to_string(count) + "\n";
  return text;
}

json label_counts(const PreparedData& data) {
  std::map<int64_t, int64_t> counts;
  for (const auto* part : {&data.train, &data.eval}) {
    for (const int64_t label : part->labels) ++counts[label];
  }
  const auto& names = data.description["label_names"];
  json out = json::object();
  for (const auto& [label, count] : counts) {
    const auto index = static_cast<std::size_t>(label);
    out[index < names.size() ? names[index].get<std::string>() : std::to_string(label)] = count;
  }
  return out;
}

// Each padding choice's efficiency and its training FLOPs per sample, with what model.unpad would
// leave of them.
void print_work(const json& report) {
  const json& p = report["padding_efficiency"];
  const json& f = report.value("train_flops_per_sample", json::object());
  const auto row = [&](const std::string& label, const std::string& key) {
    std::cout << "  " << label << std::string(20 - label.size(), ' ') << format_fixed(p[key].get<double>(), 3);
    if (f.contains(key)) std::cout << "   " << format_fixed(f[key].get<double>() / 1e9, 2) << " GFLOP";
    std::cout << "\n";
  };
  row("max_length", "max_length");
  row("longest", "longest");
  row("longest + buckets", "longest_bucketed");
  if (!f.contains("unpad")) return;
  const json& u = f["unpad"];
  const double unpadded = u["train_flops_per_sample"], as_padded = u["padded_train_flops_per_sample"];
  if (as_padded <= 0) return;
  std::cout << "  model.unpad             -   " << format_fixed(unpadded / 1e9, 2) << " GFLOP, "
            << format_fixed(100 * unpadded / as_padded, 0) << "% of the same batches' work with padding ("
            << u["padding"].get<std::string>() << (u["bucket_by_length"].get<bool>() ? " + buckets" : "") << "); attention "
            << (u["attention"] == "by_sample" ? "sample by sample, as on the CPU" : "on the padded grid, as on a GPU")
            << "\n";
}

int data_command() {
  const RunSpec spec = load_spec(g_data.spec_path, g_data.overrides);
  if (!g_data.histogram_path.empty()) {
    const TokenizerSpec& tokenizer = spec.data.tokenizer;
    const ModelRef& teacher = spec.distillation.teacher;
    check_command_output("--histogram", g_data.histogram_path,
                         {g_data.spec_path, spec.data.path, spec.data.lengths.histogram, tokenizer.path, tokenizer.vocab,
                          tokenizer.merges, spec.model.config, spec.model.weights, teacher.config, teacher.weights});
  }
  RunSpec padded_spec = spec;
  padded_spec.model.unpad = false;
  const RunModels padded = run_models(padded_spec);
  const PreparedData data = prepare_data(spec, padded.model);
  // What `run` refuses (fewer samples than a step takes) has no epoch to describe.
  check_samples_fill_a_step(spec, spec.data.source == DataSource::synthetic ? "data.num_samples" : "data.path",
                            data.train.size(), data.eval.size(), 1);
  json report = data.description;
  report["labels"] = label_counts(data);
  report["batch_size"] = spec.train.batch_size;
  const EpochWork fixed = epoch_work(data, spec, Padding::max_length, false, padded),
                  longest = epoch_work(data, spec, Padding::longest, false, padded),
                  bucketed = epoch_work(data, spec, Padding::longest, true, padded);
  report["padding_efficiency"] = {{"max_length", fixed.padding_efficiency()},
                                  {"longest", longest.padding_efficiency()},
                                  {"longest_bucketed", bucketed.padding_efficiency()}};
  report["train_flops_per_sample"] = {{"model", spec.model.config.empty() ? spec.model.name : spec.model.config},
                                      {"max_length", fixed.train_flops_per_sample()},
                                      {"longest", longest.train_flops_per_sample()},
                                      {"longest_bucketed", bucketed.train_flops_per_sample()}};
  if (spec.task != Task::plm) {  // XLNet's two-stream attention runs on the padded grid
    // model.unpad as a run of this spec would unpad: its padding and bucketing, on its device.
    RunSpec unpadding = spec;
    unpadding.model.unpad = true;
    const RunModels unpadded = run_models(unpadding);
    const EpochWork unpad = epoch_work(data, spec, spec.data.padding, spec.data.bucket_by_length, unpadded);
    const EpochWork& as_padded = spec.data.padding == Padding::max_length ? fixed
                                 : spec.data.bucket_by_length             ? bucketed
                                                                          : longest;
    report["train_flops_per_sample"]["unpad"] = {
        {"padding", to_string(spec.data.padding)},
        {"bucket_by_length", spec.data.bucket_by_length},
        {"attention", unpadded.model.unpad_attention_by_sample ? "by_sample" : "padded_grid"},
        {"train_flops_per_sample", unpad.train_flops_per_sample()},
        {"padded_train_flops_per_sample", as_padded.train_flops_per_sample()}};
  }
  if (!g_data.histogram_path.empty()) {
    write_command_output("--histogram", g_data.histogram_path, histogram_text(length_histogram(data), spec));
    report["histogram"] = g_data.histogram_path;
  }
  if (g_data.as_json) {
    std::cout << json_text(report, 2) << "\n";
    return 0;
  }
  const json& l = report["lengths"];
  std::cout << to_string(spec.data.source) << " " << (spec.data.path.empty() ? "" : spec.data.path + " ") << "- "
            << report["samples"] << " samples (" << report["train_samples"] << " train, " << report["eval_samples"]
            << " eval), " << report["truncated_samples"] << " truncated to seq_len " << spec.data.seq_len << "\n"
            // The lengths are the training samples' (what an epoch pads); the labels and the histogram
            // count every sample.
            << (report["eval_samples"].get<int64_t>() > 0 ? "tokens per training sample: mean " : "tokens per sample: mean ") << format_fixed(l["mean"].get<double>(), 1) << ", p10 "
            << format_fixed(l["p10"].get<double>(), 1) << ", median " << format_fixed(l["median"].get<double>(), 1)
            << ", p90 " << format_fixed(l["p90"].get<double>(), 1) << ", max " << l["max"] << "\n"
            << (spec.task == Task::classification ? "labels (every sample): " + json_text(report["labels"]) + "\n" : "");
  if (report["corpus"].is_object()) {
    const json& c = report["corpus"];
    if (c.contains("lines")) {
      std::cout << "corpus: " << c["files"] << " file(s), " << c["lines"] << " lines, a sample each\n";
    } else {
      std::cout << "corpus: " << c["files"] << " file(s) packed into " << c["blocks"] << " blocks of "
                << c["block_tokens"] << " tokens\n";
    }
  }
  if (report["masking"].is_object()) {
    const json& m = report["masking"];
    std::cout << "masking: " << format_fixed(100 * m["probability"].get<double>(), 1) << "% of tokens, "
              << format_fixed(100 * m["mask_fraction"].get<double>(), 0) << "/"
              << format_fixed(100 * m["random_fraction"].get<double>(), 0) << "/"
              << format_fixed(100 * (1 - m["mask_fraction"].get<double>() - m["random_fraction"].get<double>()), 0)
              << " mask/random/keep, mask id " << m["mask_token_id"] << ", never " << json_text(m["never_masked"])
              << " (new masks every epoch)\n";
  }
  if (report["permutation"].is_object()) {
    const json& m = report["permutation"];
    std::cout << "permutation LM: spans of up to " << m["max_span_length"] << " tokens, each "
              << format_fixed(100 * m["probability"].get<double>(), 1) << "% of its context, mask id "
              << m["mask_token_id"] << ", never " << json_text(m["never_masked"])
              << " (new spans and orders every epoch)\n";
  }
  std::cout << "padding efficiency at batch " << spec.train.batch_size << " (real / computed tokens, one epoch)"
            << ", and training FLOPs per sample" << (draws_masks(spec) ? " (the first epoch's masks)" : "") << ":\n";
  print_work(report);
  if (!g_data.histogram_path.empty()) {
    std::cout << "length histogram: " << g_data.histogram_path << " (use it as data.lengths.histogram)\n";
  }
  return 0;
}

}  // namespace

void register_data_command(CLI::App& app, std::function<int()>& action) {
  auto* cmd = app.add_subcommand("data", "describe a spec's data: lengths, labels, padding efficiency; --histogram");
  cmd->add_option("spec", g_data.spec_path, "run spec (.json, .yaml, .yml)")->required();
  cmd->add_option("--set", g_data.overrides, "override a field: --set data.seq_len=256 (repeatable)")
      ->allow_extra_args(false)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--histogram", g_data.histogram_path, "write the length histogram here ('length count' lines)");
  cmd->add_flag("--json", g_data.as_json, "machine-readable output");
  cmd->callback([&action] { action = data_command; });
}

}  // namespace tbench
