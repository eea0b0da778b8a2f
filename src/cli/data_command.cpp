// `tbench data SPEC`: what the spec's data looks like to the model — sample and token counts,
// the length spread, labels, and the padding efficiency each batching choice would give — and
// `--histogram FILE`, the length histogram that `data.lengths.histogram` reads, so synthetic
// data can be shaped like the user's own.
#include <fstream>
#include <iostream>
#include <map>

#include "tbench/cli/commands.hpp"
#include "tbench/data/data_sources.hpp"
#include "tbench/results/result_files.hpp"
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

// Real tokens over computed tokens for one epoch planned the way a run would plan it.
double padding_efficiency(const PreparedData& data, const RunSpec& spec, Padding padding, bool bucketed) {
  const TokenizedSamples& samples = data.train;
  CollateOptions collate = data.collate;
  collate.padding = padding;
  SamplerOptions o;
  o.batch_size = spec.train.batch_size;
  o.accum_steps = spec.train.grad_accum_steps;
  o.bucket_by_length = bucketed;
  o.drop_last = spec.data.drop_last;
  o.seed = spec.data.seed;
  double real = 0, computed = 0;
  for (const auto& step : plan_epoch(samples, o, 1)) {
    for (const auto& micro : step) {
      int64_t longest = 0;
      for (const int64_t i : micro) {
        real += static_cast<double>(samples.length(i));
        longest = std::max(longest, samples.length(i));
      }
      computed += static_cast<double>(padded_width(collate, longest)) * static_cast<double>(micro.size());
    }
  }
  return computed > 0 ? real / computed : 0.0;
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

int data_command() {
  const RunSpec spec = load_spec(g_data.spec_path, g_data.overrides);
  const PreparedData data = prepare_data(spec, model_config_for(spec));
  json report = data.description;
  report["labels"] = label_counts(data);
  report["batch_size"] = spec.train.batch_size;
  report["padding_efficiency"] = {{"max_length", padding_efficiency(data, spec, Padding::max_length, false)},
                                  {"longest", padding_efficiency(data, spec, Padding::longest, false)},
                                  {"longest_bucketed", padding_efficiency(data, spec, Padding::longest, true)}};
  if (!g_data.histogram_path.empty()) {
    write_file_atomically(g_data.histogram_path, histogram_text(length_histogram(data), spec));
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
            << "tokens per sample: mean " << format_fixed(l["mean"].get<double>(), 1) << ", p10 " << l["p10"]
            << ", median " << l["median"] << ", p90 " << l["p90"] << ", max " << l["max"] << "\n"
            << (spec.task == Task::classification ? "labels: " + json_text(report["labels"]) + "\n" : "")
            << "padding efficiency at batch " << spec.train.batch_size << " (real / computed tokens, one epoch):\n";
  if (report["corpus"].is_object()) {
    const json& c = report["corpus"];
    std::cout << "corpus: " << c["files"] << " file(s) packed into " << c["blocks"] << " blocks of " << c["block_tokens"]
              << " tokens\n";
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
  const json& p = report["padding_efficiency"];
  std::cout << "  max_length          " << format_fixed(p["max_length"].get<double>(), 3) << "\n"
            << "  longest             " << format_fixed(p["longest"].get<double>(), 3) << "\n"
            << "  longest + buckets   " << format_fixed(p["longest_bucketed"].get<double>(), 3) << "\n";
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
