#include "tbench/results/records.hpp"

#include "tbench/json_text.hpp"

namespace tbench {

void to_json(nlohmann::json& j, const IterationRecord& r) {
  j = {{"epoch", r.epoch}, {"step", r.step}, {"global_step", r.global_step}, {"samples", r.samples},
       {"tokens", r.tokens}, {"real_tokens", r.real_tokens}, {"train_flops", r.train_flops}, {"seconds", r.seconds},
       {"data_seconds", r.data_seconds}, {"comm_wait_seconds", r.comm_wait_seconds}, {"loss", r.loss}, {"lr", r.lr}, {"loss_scale", r.loss_scale},
       {"skipped", r.skipped}, {"warmup", r.warmup}, {"ended_at", r.ended_at}};
  if (r.profiled) j["profiled"] = true;
  if (r.host_seconds) j["host_seconds"] = *r.host_seconds;
  if (r.device_idle_at_start) j["device_idle_at_start"] = *r.device_idle_at_start;
  if (!r.loss_terms.empty()) {
    auto& terms = j["loss_terms"] = nlohmann::json::object();
    for (const auto& [name, value] : r.loss_terms) terms[name] = value;
  }
}

void to_json(nlohmann::json& j, const EpochRecord& r) {
  j = {{"epoch", r.epoch}, {"steps", r.steps}, {"samples", r.samples}, {"tokens", r.tokens},
       {"seconds", r.seconds}, {"samples_per_s", r.samples_per_s}, {"tokens_per_s", r.tokens_per_s},
       {"it_per_s", r.it_per_s}, {"loss", r.loss}, {"complete", r.complete}, {"step_seconds", r.step_seconds}};
  if (r.profiler_seconds > 0) j["profiler_seconds"] = r.profiler_seconds;
  const auto bytes = [](int64_t b) { return b < 0 ? nlohmann::json(nullptr) : nlohmann::json(b); };
  j["peak_allocated_bytes"] = bytes(r.peak_allocated_bytes);
  j["peak_reserved_bytes"] = bytes(r.peak_reserved_bytes);
  j["peak_rss_bytes"] = bytes(r.peak_rss_bytes);
  j["gpu"] = r.gpu ? to_json(*r.gpu) : nlohmann::json(nullptr);
  j["eval"] = r.eval_samples == 0 ? nlohmann::json(nullptr)
                                  : nlohmann::json{{"loss", or_null(r.eval_loss)},
                                                   {"accuracy", or_null(r.eval_accuracy)},
                                                   {"samples", r.eval_samples},
                                                   {"seconds", r.eval_seconds}};
  if (r.eval_samples > 0 && r.eval_perplexity) j["eval"]["perplexity"] = *r.eval_perplexity;
  if (r.eval_samples > 0 && r.eval_pseudo_perplexity) {
    j["eval"]["pseudo_perplexity"] = *r.eval_pseudo_perplexity;
    j["eval"]["pseudo_perplexity_tokens"] = r.eval_pseudo_perplexity_tokens;
  }
}

void from_json(const nlohmann::json& j, IterationRecord& r) {
  r.epoch = j.at("epoch");
  r.step = j.at("step");
  r.global_step = j.at("global_step");
  r.samples = j.at("samples");
  r.tokens = j.at("tokens");
  r.real_tokens = j.at("real_tokens");
  r.train_flops = j.value("train_flops", 0.0);
  r.seconds = j.at("seconds");
  r.data_seconds = j.at("data_seconds");
  r.comm_wait_seconds = j.value("comm_wait_seconds", 0.0);
  r.loss = j.at("loss");
  r.lr = j.at("lr");
  r.loss_scale = j.value("loss_scale", 1.0);
  r.skipped = j.value("skipped", false);
  r.warmup = j.value("warmup", false);
  r.profiled = j.value("profiled", false);
  r.ended_at = j.value("ended_at", 0.0);
  if (j.contains("host_seconds") && j["host_seconds"].is_number()) r.host_seconds = j["host_seconds"].get<double>();
  if (j.contains("device_idle_at_start") && j["device_idle_at_start"].is_boolean()) {
    r.device_idle_at_start = j["device_idle_at_start"].get<bool>();
  }
  if (j.contains("loss_terms") && j["loss_terms"].is_object()) {
    for (const auto& item : j["loss_terms"].items()) {
      if (item.value().is_number()) r.loss_terms.emplace_back(item.key(), item.value().get<double>());
    }
  }
}

}  // namespace tbench
