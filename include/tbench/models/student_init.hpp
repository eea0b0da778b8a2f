#pragma once
// DistilBERT's initialisation (Sanh et al., 2019; HF's scripts/extract_distilbert.py): a student
// starts from its teacher's embeddings, from evenly spaced teacher layers (0 2 4 7 9 11 of 12 for
// 6) and from its masked-LM head, so distillation begins near the teacher instead of at random.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "tbench/models/model_config.hpp"

namespace tbench {

// The teacher layer each student layer starts from: i -> round(i (T - 1) / (S - 1)), so the first
// and the last are kept.
std::vector<int64_t> teacher_layers_for(int64_t student_layers, int64_t teacher_layers);

// Why `student` cannot start from `teacher` (other widths, vocabulary, depth, or a pair of
// architectures without a mapping); empty when it can. Pairs: the same architecture, or a
// DistilBERT student of a BERT teacher.
std::string student_init_mismatch(const ModelConfig& student, const ModelConfig& teacher);

// Copies the teacher's tensors into the student's matching *ForMaskedLM parameters (both built by
// build_masked_lm). Returns the student parameters it set; fixed tables (sinusoidal positions)
// and tensors the teacher lacks (DistilBERT has no token types to take) are left as they are.
std::vector<std::string> init_student_from_teacher(torch::nn::Module& student, const ModelConfig& student_config,
                                                   const torch::nn::Module& teacher, const ModelConfig& teacher_config);

}  // namespace tbench
