#pragma once
// One factory per architecture file and task (src/models/<arch>.cpp); build_classifier,
// build_masked_lm and build_permutation_lm pick among them.
#include "tbench/models/classifier.hpp"
#include "tbench/models/masked_lm.hpp"

namespace tbench {
namespace bert {
std::shared_ptr<SequenceClassifier> make_classifier(const ModelConfig& c, int64_t num_labels);
std::shared_ptr<MaskedLanguageModel> make_masked_lm(const ModelConfig& c);
}  // namespace bert
namespace roberta {
std::shared_ptr<SequenceClassifier> make_classifier(const ModelConfig& c, int64_t num_labels);
std::shared_ptr<MaskedLanguageModel> make_masked_lm(const ModelConfig& c);
}  // namespace roberta
namespace distilbert {
std::shared_ptr<SequenceClassifier> make_classifier(const ModelConfig& c, int64_t num_labels);
std::shared_ptr<MaskedLanguageModel> make_masked_lm(const ModelConfig& c);
}  // namespace distilbert
namespace xlnet {
std::shared_ptr<SequenceClassifier> make_classifier(const ModelConfig& c, int64_t num_labels);
std::shared_ptr<MaskedLanguageModel> make_permutation_lm(const ModelConfig& c);  // XLNetLMHeadModel
}  // namespace xlnet
}  // namespace tbench
