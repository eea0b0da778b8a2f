#include "tbench/train/loss_scaler.hpp"

namespace tbench {

LossScaler::LossScaler(bool enabled, const torch::Device& device, double initial_scale) : enabled_(enabled) {
  if (!enabled_) return;
  scale_ = torch::full({1}, initial_scale, torch::TensorOptions().dtype(torch::kFloat).device(device));
  growth_tracker_ = torch::zeros({1}, torch::TensorOptions().dtype(torch::kInt).device(device));
}

torch::Tensor LossScaler::scale(const torch::Tensor& loss) const {
  return enabled_ ? loss * scale_.to(loss.scalar_type()) : loss;
}

torch::Tensor LossScaler::unscale(const std::vector<torch::Tensor>& params) {
  auto found_inf = torch::zeros({1}, scale_.options());
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  const auto inv_scale = scale_.reciprocal();
  at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
  return found_inf;
}

void LossScaler::update(const torch::Tensor& found_inf) {
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf, /*growth=*/2.0, /*backoff=*/0.5,
                         /*growth_interval=*/2000);
}

}  // namespace tbench
