#pragma once
// XLNet's relative positional encoding, exposed so tests can check it piece by piece.
#include <torch/torch.h>

namespace tbench::xlnet {

// The relative distances that bidirectional attention ("bi") encodes for qlen queries over klen
// keys: klen, klen - 1, ..., 1 - qlen (klen + qlen values, float32), as HF's
// arange(klen, -qlen, -1).
torch::Tensor relative_positions(int64_t qlen, int64_t klen, torch::Device device = torch::kCPU);

// Transformer-XL's sinusoids of those distances: [P] -> [P, d_model], the sines of
// pos / 10000^(2k / d_model) followed by the cosines (float32, computed as HF does).
torch::Tensor positional_encoding(const torch::Tensor& positions, int64_t d_model);

// HF's rel_shift_bnij. x: [B, H, qlen, P], where column c scores query i against the distance
// positions[c]. Returns [B, H, qlen, klen] whose entry (i, j) is the score for distance i - j,
// as a view of x (no copy).
torch::Tensor rel_shift(const torch::Tensor& x, int64_t klen);

}  // namespace tbench::xlnet
