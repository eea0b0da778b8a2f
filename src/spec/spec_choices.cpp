// How each spec choice is spelled: in spec files, in results, and in `validate --fields`.
#include <regex>

#include "tbench/spec/spec.hpp"

namespace tbench {

const ChoiceNames<Precision>& choice_names(Precision) {
  static const ChoiceNames<Precision> names = {
      {Precision::fp32, "fp32"}, {Precision::fp16, "fp16"}, {Precision::bf16, "bf16"}};
  return names;
}

const ChoiceNames<DeviceKind>& choice_names(DeviceKind) {
  static const ChoiceNames<DeviceKind> names = {{DeviceKind::cpu, "cpu"}, {DeviceKind::cuda, "cuda"}};
  return names;
}

const ChoiceNames<Task>& choice_names(Task) {
  static const ChoiceNames<Task> names = {
      {Task::classification, "classification"}, {Task::mlm, "mlm"}, {Task::distillation, "distillation"},
      {Task::plm, "plm"}};
  return names;
}

const ChoiceNames<DataSource>& choice_names(DataSource) {
  static const ChoiceNames<DataSource> names = {{DataSource::synthetic, "synthetic"},
                                                {DataSource::tokenized, "tokenized"},
                                                {DataSource::text, "text"},
                                                {DataSource::corpus, "corpus"}};
  return names;
}

const ChoiceNames<TextFormat>& choice_names(TextFormat) {
  static const ChoiceNames<TextFormat> names = {
      {TextFormat::automatic, "auto"}, {TextFormat::csv, "csv"}, {TextFormat::tsv, "tsv"}, {TextFormat::jsonl, "jsonl"}};
  return names;
}

const ChoiceNames<LengthDistributionKind>& choice_names(LengthDistributionKind) {
  using K = LengthDistributionKind;
  static const ChoiceNames<K> names = {{K::fixed, "fixed"},
                                       {K::uniform, "uniform"},
                                       {K::normal, "normal"},
                                       {K::lognormal, "lognormal"},
                                       {K::histogram, "histogram"}};
  return names;
}

const ChoiceNames<Padding>& choice_names(Padding) {
  static const ChoiceNames<Padding> names = {{Padding::max_length, "max_length"}, {Padding::longest, "longest"}};
  return names;
}

const ChoiceNames<AttentionChoice>& choice_names(AttentionChoice) {
  static const ChoiceNames<AttentionChoice> names = {
      {AttentionChoice::automatic, "auto"}, {AttentionChoice::eager, "eager"}, {AttentionChoice::sdpa, "sdpa"}};
  return names;
}

const ChoiceNames<PaddingMaskChoice>& choice_names(PaddingMaskChoice) {
  static const ChoiceNames<PaddingMaskChoice> names = {{PaddingMaskChoice::automatic, "auto"},
                                                       {PaddingMaskChoice::always, "always"}};
  return names;
}

const ChoiceNames<OptimizerImpl>& choice_names(OptimizerImpl) {
  static const ChoiceNames<OptimizerImpl> names = {{OptimizerImpl::automatic, "auto"},
                                                   {OptimizerImpl::loop, "loop"},
                                                   {OptimizerImpl::foreach, "foreach"},
                                                   {OptimizerImpl::onepass, "onepass"},
                                                   {OptimizerImpl::fused, "fused"}};
  return names;
}

const ChoiceNames<CpuAllocatorChoice>& choice_names(CpuAllocatorChoice) {
  static const ChoiceNames<CpuAllocatorChoice> names = {{CpuAllocatorChoice::caching, "caching"},
                                                        {CpuAllocatorChoice::system, "system"}};
  return names;
}

const ChoiceNames<CpuDropoutChoice>& choice_names(CpuDropoutChoice) {
  static const ChoiceNames<CpuDropoutChoice> names = {{CpuDropoutChoice::fused, "fused"},
                                                      {CpuDropoutChoice::torch, "torch"}};
  return names;
}

std::string DeviceRef::text() const {
  if (!is_cuda()) return "cpu";
  return index < 0 ? "cuda" : "cuda:" + std::to_string(index);
}

std::optional<DeviceRef> parse_device(const std::string& text) {
  static const std::regex pattern("(cpu|cuda)(:([0-9]{1,6}))?");
  std::smatch match;
  if (!std::regex_match(text, match, pattern)) return std::nullopt;
  DeviceRef device;
  device.kind = match[1] == "cuda" ? DeviceKind::cuda : DeviceKind::cpu;
  if (match[3].matched) {
    if (!device.is_cuda()) return std::nullopt;  // "cpu:0" is not a device name tbench accepts
    device.index = std::stoll(match[3]);
  }
  return device;
}

}  // namespace tbench
