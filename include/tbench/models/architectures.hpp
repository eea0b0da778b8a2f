#pragma once
// One factory per architecture file (src/models/<arch>.cpp); build_classifier picks among them.
#include "tbench/models/classifier.hpp"

namespace tbench {
namespace bert { std::shared_ptr<SequenceClassifier> make_classifier(const ModelConfig& c, int64_t num_labels); }
namespace roberta { std::shared_ptr<SequenceClassifier> make_classifier(const ModelConfig& c, int64_t num_labels); }
namespace distilbert { std::shared_ptr<SequenceClassifier> make_classifier(const ModelConfig& c, int64_t num_labels); }
namespace xlnet { std::shared_ptr<SequenceClassifier> make_classifier(const ModelConfig& c, int64_t num_labels); }
}  // namespace tbench
