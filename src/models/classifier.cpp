// The architecture registry: ModelConfig -> the matching *ForSequenceClassification or
// *ForMaskedLM module (bert::ForSequenceClassification, ...; XLNet's LM: xlnet::LMHeadModel).
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

std::shared_ptr<MaskedLanguageModel> build_masked_lm(const ModelConfig& config) {
  switch (config.arch) {
    case Architecture::bert: return bert::make_masked_lm(config);
    case Architecture::roberta: return roberta::make_masked_lm(config);
    case Architecture::distilbert: return distilbert::make_masked_lm(config);
    case Architecture::xlnet: break;
  }
  throw Error(ExitCode::bad_input, config.source + ": " + config.name + " is " + to_string(config.arch) +
                                       ", which pre-trains with permutation LM, not masked LM");
}

std::shared_ptr<MaskedLanguageModel> build_permutation_lm(const ModelConfig& config) {
  if (config.arch == Architecture::xlnet) return xlnet::make_permutation_lm(config);
  throw Error(ExitCode::bad_input, config.source + ": " + config.name + " is " + to_string(config.arch) +
                                       ": permutation LM is XLNet's pre-training (the others pre-train with masked LM)");
}

int64_t count_parameters(const torch::nn::Module& module) {
  int64_t total = 0;
  for (const auto& p : module.parameters()) total += p.numel();
  return total;
}

}  // namespace tbench
