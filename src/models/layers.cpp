#include "tbench/models/layers.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "tbench/env/torch_features.hpp"

namespace tbench::layers {

torch::Tensor activation(const std::string& name, const torch::Tensor& x) {
  if (name == "gelu") return torch::gelu(x);  // exact: 0.5 x (1 + erf(x / sqrt 2))
  if (name == "gelu_new") return torch::gelu(x, "tanh");
  if (name == "relu") return torch::relu(x);
  TORCH_CHECK(false, "unsupported activation '", name, "'");
}

torch::Tensor padding_bias(const torch::Tensor& attention_mask, torch::ScalarType dtype) {
  const double most_negative = [&] {
    switch (dtype) {
      case torch::kHalf: return -65504.0;
      case torch::kBFloat16: return -3.3895313892515355e38;
      case torch::kDouble: return std::numeric_limits<double>::lowest();
      default: return static_cast<double>(std::numeric_limits<float>::lowest());
    }
  }();
  auto keep = attention_mask.to(dtype).unsqueeze(1).unsqueeze(2);
  return (1.0 - keep) * most_negative;
}

torch::Tensor attention_bias(const ModelInputs& inputs, bool mask_every_batch, torch::ScalarType dtype) {
  if (!inputs.has_padding && !mask_every_batch) return {};
  return padding_bias(inputs.attention_mask, dtype);
}

torch::Tensor split_heads(const torch::Tensor& x, int64_t num_heads) {
  const auto b = x.size(0), s = x.size(1), hd = x.size(2);
  return x.view({b, s, num_heads, hd / num_heads}).transpose(1, 2);
}

torch::Tensor merge_heads(const torch::Tensor& x) {
  const auto b = x.size(0), h = x.size(1), s = x.size(2), d = x.size(3);
  return x.transpose(1, 2).reshape({b, s, h * d});
}

torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& bias, double dropout_p, bool training, AttentionKernel kernel) {
  const double p = training ? dropout_p : 0.0;
#if TBENCH_HAS_SDPA
  if (kernel == AttentionKernel::sdpa) {
    if (!bias.defined()) return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, p);
    return at::scaled_dot_product_attention(q, k, v, bias.to(q.scalar_type()), p);
  }
#endif
  auto scores = torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(static_cast<double>(q.size(-1)));
  auto probs = torch::softmax(bias.defined() ? scores + bias : scores, -1);
  probs = layers::dropout(probs, p, training);
  return torch::matmul(probs, v);
}

bool auto_attention_prefers_eager(const AttentionUse& use) { return !use.on_cuda && use.fused_cpu_dropout; }

AttentionKernel resolve_attention(AttentionChoice requested, const AttentionUse& use) {
  switch (requested) {
    case AttentionChoice::eager: return AttentionKernel::eager;
    case AttentionChoice::automatic:
      if (!features::kSdpa || auto_attention_prefers_eager(use)) return AttentionKernel::eager;
      return AttentionKernel::sdpa;
    case AttentionChoice::sdpa:
      if (features::kSdpa) return AttentionKernel::sdpa;
      break;
  }
  throw std::invalid_argument(std::string("attention kernel '") + choice_name(requested) +
                              "' is not available in this build");
}

void init_weights(torch::nn::Module& module, double std) {
  torch::NoGradGuard no_grad;
  for (auto& child : module.modules(/*include_self=*/false)) {
    if (auto* lin = child->as<torch::nn::Linear>()) {
      lin->weight.normal_(0.0, std);
      if (lin->bias.defined()) lin->bias.zero_();
    } else if (auto* emb = child->as<torch::nn::Embedding>()) {
      if (!emb->weight.requires_grad()) continue;  // fixed (sinusoidal) tables keep their values
      emb->weight.normal_(0.0, std);
      if (emb->options.padding_idx()) emb->weight[*emb->options.padding_idx()].zero_();
    } else if (auto* norm = child->as<torch::nn::LayerNorm>()) {
      norm->weight.fill_(1.0);
      norm->bias.zero_();
    }
  }
}

std::shared_ptr<torch::nn::Module> add_group(torch::nn::Module& parent, const std::string& name) {
  return parent.register_module(name, std::make_shared<torch::nn::Module>());
}

Linear linear(int64_t in, int64_t out) { return Linear(in, out); }

TokenLayout TokenLayout::of(const ModelInputs& in, bool unpad, bool by_sample) {
  TokenLayout layout;
  if (!unpad || !in.has_padding) return layout;
  layout.batch_ = in.attention_mask.size(0);
  layout.seq_len_ = in.attention_mask.size(1);
  // The loader lists the positions on the host; found here, nonzero would wait for the device.
  layout.positions_ = in.token_positions.defined() ? in.token_positions
                                                   : in.attention_mask.reshape({-1}).nonzero().reshape({-1});
  const auto rows = torch::arange(layout.positions_.size(0), layout.positions_.options());
  layout.row_of_ = torch::zeros({layout.batch_ * layout.seq_len_}, rows.options())
                       .index_copy_(0, layout.positions_, rows)
                       .view({layout.batch_, layout.seq_len_});
  if (by_sample) layout.find_samples(in.attention_mask);
  return layout;
}

void TokenLayout::find_samples(const torch::Tensor& attention_mask) {
  // A CPU run: reading the mask waits for nothing.
  const auto mask = attention_mask.to(torch::kCPU, torch::kLong).contiguous();
  const int64_t* real = mask.data_ptr<int64_t>();
  int64_t first_row = 0;
  bool consecutive = true;
  for (int64_t b = 0; b < batch_; ++b, real += seq_len_) {
    int64_t length = 0, start = -1, end = -1;
    for (int64_t s = 0; s < seq_len_; ++s) {
      if (real[s] == 0) continue;
      ++length;
      if (start < 0) start = s;
      end = s;
    }
    sample_rows_.emplace_back(first_row, length);
    sample_starts_.push_back(start);
    consecutive = consecutive && end - start + 1 == length;
    first_row += length;
  }
  if (!consecutive) sample_starts_.clear();
}

torch::Tensor TokenLayout::to_rows(const torch::Tensor& grid) const {
  if (!unpadded() || !grid.defined()) return grid;
  auto flat_shape = grid.sizes().vec();
  flat_shape.erase(flat_shape.begin());
  flat_shape[0] = batch_ * seq_len_;
  return grid.reshape(flat_shape).index_select(0, positions_).unsqueeze(0);
}

torch::Tensor TokenLayout::to_grid(const torch::Tensor& rows) const {
  if (!unpadded()) return rows;
  const auto width = rows.size(-1);
  return torch::zeros({batch_ * seq_len_, width}, rows.options())
      .index_copy(0, positions_, rows.reshape({-1, width}))
      .view({batch_, seq_len_, width});
}

torch::Tensor TokenLayout::rows_of(const torch::Tensor& grid_positions) const {
  if (!unpadded()) return grid_positions;
  return row_of_.reshape({-1}).index_select(0, grid_positions);
}

torch::Tensor TokenLayout::at_position(const torch::Tensor& x, int64_t position) const {
  if (!unpadded()) return x.narrow(1, position, 1);
  return x.reshape({-1, x.size(-1)}).index_select(0, row_of_.select(1, position)).unsqueeze(1);
}

namespace {

// x's query, key and value side by side, [..., 3·H·D], from one GEMM over the three weights stacked.
torch::Tensor stacked_qkv(const torch::Tensor& x, Linear& query, Linear& key, Linear& value) {
  const auto weight = torch::cat({query->weight, key->weight, value->weight});
  const auto bias = torch::cat({query->bias, key->bias, value->bias});
  return torch::linear(x, weight, bias);
}

}  // namespace

QueryKeyValue project_qkv(const torch::Tensor& x, const TokenLayout& layout, Linear& query, Linear& key, Linear& value,
                          int64_t heads, bool fused) {
  if (!fused) {
    return {split_heads(layout.to_grid(query(x)), heads), split_heads(layout.to_grid(key(x)), heads),
            split_heads(layout.to_grid(value(x)), heads)};
  }
  // [B, S, 3·H·D] -> [3, B, H, S, D]: rows of the stacked weight are query's, then key's, then value's.
  const auto stacked = layout.to_grid(stacked_qkv(x, query, key, value));
  const auto b = stacked.size(0), s = stacked.size(1);
  const auto parts = stacked.view({b, s, 3, heads, -1}).permute({2, 0, 3, 1, 4}).unbind(0);
  return {parts[0], parts[1], parts[2]};
}

QueryKeyValue project_qkv_at(const torch::Tensor& x, const TokenLayout& layout, int64_t position, Linear& query,
                             Linear& key, Linear& value, int64_t heads) {
  return {split_heads(query(layout.at_position(x, position)), heads), split_heads(layout.to_grid(key(x)), heads),
          split_heads(layout.to_grid(value(x)), heads)};
}

torch::Tensor rows_at(const torch::Tensor& x, const TokenLayout& layout, std::optional<int64_t> position) {
  return position ? layout.at_position(x, *position) : x;
}

torch::Tensor head_position(const torch::Tensor& x, const TokenLayout& layout, int64_t position, bool sparse_last_layer) {
  return (sparse_last_layer ? x : layout.at_position(x, position)).select(1, 0);
}

namespace {

// model.unpad on the CPU: each sample attends over its own real tokens, which are a contiguous
// range of the rows, so there is no grid to copy to and from, no mask, and no scores at the
// padding (the grid computes B S^2 of them, this the sum of each sample's length squared). One
// small GEMM per sample and op: on a GPU, a kernel launch each, which is why the grid serves there.
torch::Tensor attention_by_sample(const torch::Tensor& x, const TokenLayout& layout, std::optional<int64_t> at,
                                  Linear& query, Linear& key, Linear& value, const SelfAttentionSettings& s) {
  torch::Tensor queries, keys, values;  // every row's at once: one GEMM each (or one for all three)
  if (s.fused_qkv && !at) {
    const auto parts = stacked_qkv(x, query, key, value).chunk(3, -1);
    queries = parts[0], keys = parts[1], values = parts[2];
  } else {
    queries = query(at ? layout.at_position(x, *at) : x);  // [B, 1, H] or [1, T, H]
    keys = key(x);
    values = value(x);
  }
  std::vector<torch::Tensor> contexts;
  int64_t sample = 0;
  for (const auto& [first, length] : layout.sample_rows()) {
    const auto own = [&, first = first, length = length](const torch::Tensor& t) {
      return split_heads(t.narrow(1, first, length), s.heads);
    };
    const auto q = at ? split_heads(queries.narrow(0, sample++, 1), s.heads) : own(queries);
    contexts.push_back(merge_heads(attention(q, own(keys), own(values), /*bias=*/{}, s.dropout_p, s.training, s.kernel)));
  }
  return torch::cat(contexts, at ? 0 : 1);  // [B, 1, H], or the rows [1, T, H] in order
}

}  // namespace

torch::Tensor self_attention(const torch::Tensor& x, const torch::Tensor& bias, const TokenLayout& layout,
                             std::optional<int64_t> at, Linear& query, Linear& key, Linear& value,
                             const SelfAttentionSettings& s) {
  if (layout.attends_by_sample()) return attention_by_sample(x, layout, at, query, key, value, s);
  const auto qkv = at ? project_qkv_at(x, layout, *at, query, key, value, s.heads)
                      : project_qkv(x, layout, query, key, value, s.heads, s.fused_qkv);
  const auto context = merge_heads(attention(qkv.query, qkv.key, qkv.value, bias, s.dropout_p, s.training, s.kernel));
  return context_rows(context, layout, at);
}

torch::Tensor context_rows(const torch::Tensor& context, const TokenLayout& layout, std::optional<int64_t> position) {
  return position ? context : layout.to_rows(context);
}

torch::nn::LayerNorm layer_norm(int64_t size, double eps) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({size}).eps(eps));
}

torch::Tensor masked_lm_scores(const torch::Tensor& hidden, const TokenLayout& layout,
                               const torch::Tensor& scored_positions, Linear& transform,
                               const std::string& activation_name, torch::nn::LayerNorm& norm,
                               const torch::Tensor& word_embeddings, const torch::Tensor& bias) {
  const auto rows = scored_positions.defined()
                        ? hidden.reshape({-1, hidden.size(-1)}).index_select(0, layout.rows_of(scored_positions))
                        : hidden;
  // Under autocast the transform's output is bf16/fp16, and no residual add promotes it back (as in
  // the encoder): LibTorch 1.13's CPU autocast runs layer_norm as it finds it, so bf16 input against
  // fp32 weights fails. The norm runs in its weights' precision, as CUDA autocast would run it.
  const auto activated = activation(activation_name, transform(rows));
  const auto transformed = norm(activated.to(norm->weight.scalar_type()));
  return torch::linear(transformed, word_embeddings, bias);
}

}  // namespace tbench::layers
