// The architecture registry: ModelConfig -> the matching *ForSequenceClassification module.
#include "tbench/errors.hpp"
#include "tbench/models/architectures.hpp"

namespace tbench {

std::shared_ptr<SequenceClassifier> build_classifier(const ModelConfig& config, int64_t num_labels) {
  switch (config.arch) {
    case Architecture::bert: return bert::make_classifier(config, num_labels);
    case Architecture::roberta: return roberta::make_classifier(config, num_labels);
    case Architecture::distilbert: return distilbert::make_classifier(config, num_labels);
    case Architecture::xlnet: return xlnet::make_classifier(config, num_labels);
  }
  throw Error(ExitCode::internal, config.source + ": no classifier for architecture " + to_string(config.arch));
}

int64_t count_parameters(const torch::nn::Module& module) {
  int64_t total = 0;
  for (const auto& p : module.parameters()) total += p.numel();
  return total;
}

}  // namespace tbench
