// The architecture registry: ModelConfig -> the matching *ForSequenceClassification module.
#include "tbench/errors.hpp"
#include "tbench/models/architectures.hpp"

namespace tbench {

bool has_classifier(Architecture arch) {
  switch (arch) {
    case Architecture::bert:
    case Architecture::roberta:
    case Architecture::distilbert:
    case Architecture::xlnet: return true;
  }
  return false;
}

std::shared_ptr<SequenceClassifier> build_classifier(const ModelConfig& config, int64_t num_labels) {
  switch (config.arch) {
    case Architecture::bert: return bert::make_classifier(config, num_labels);
    case Architecture::roberta: return roberta::make_classifier(config, num_labels);
    case Architecture::distilbert: return distilbert::make_classifier(config, num_labels);
    case Architecture::xlnet: return xlnet::make_classifier(config, num_labels);
  }
  throw input_error(config.source + ": model_type: '" + to_string(config.arch) +
                    "' is recognised but not implemented in this build");
}

int64_t count_parameters(const torch::nn::Module& module) {
  int64_t total = 0;
  for (const auto& p : module.parameters()) total += p.numel();
  return total;
}

}  // namespace tbench
