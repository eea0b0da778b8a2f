#pragma once
// Files compiled into the binary (see cmake/embed.cmake): the shipped HF-format model configs,
// the default run spec (configs/smoke_cpu.json) and the result JSON Schema.
#include <string>
#include <vector>

namespace tbench::embedded {

struct EmbeddedFile {
  std::string name;  // file name without extension, e.g. "bert-base-cased"
  std::string text;
};

const std::vector<EmbeddedFile>& model_configs();
const char* default_spec();
const char* result_schema();

}  // namespace tbench::embedded
