// Run spec: JSON and YAML parse to the same spec, defaults fill in, --set overrides, and every
// kind of bad input gets one message that names the file and the field.
#include <gtest/gtest.h>

#include "support/cli.hpp"
#include "tbench/errors.hpp"
#include "tbench/spec/spec.hpp"

namespace tbench {
namespace {

RunSpec resolve_json(const std::string& text, const std::vector<std::string>& overrides = {}) {
  SpecDocument doc = parse_spec_text(text, "spec.json", false);
  apply_overrides(doc, overrides);
  return resolve_spec(doc);
}

RunSpec resolve_yaml(const std::string& text, const std::vector<std::string>& overrides = {}) {
  SpecDocument doc = parse_spec_text(text, "spec.yaml", true);
  apply_overrides(doc, overrides);
  return resolve_spec(doc);
}

// The message of the bad-input error `f` throws ("" if it does not throw one).
template <typename F>
std::string input_error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

TEST(Spec, DefaultsAreFilledAndRecorded) {
  const RunSpec spec = resolve_json(R"({"model": "tiny-bert"})");
  EXPECT_EQ(spec.name, "spec");
  EXPECT_EQ(spec.model.name, "tiny-bert");
  EXPECT_EQ(spec.num_labels, 2);
  EXPECT_EQ(spec.data.seq_len, 128);
  EXPECT_EQ(spec.data.seed, spec.train.seed);
  EXPECT_EQ(spec.train.batch_size, 32);
  EXPECT_DOUBLE_EQ(spec.train.lr, 5e-5);
  EXPECT_EQ(spec.precision, Precision::fp32);
  EXPECT_EQ(spec.device.text(), "cpu");
  EXPECT_EQ(spec.timing.warmup_steps, 5);
  EXPECT_EQ(spec.cpu.allocator, CpuAllocatorChoice::caching);
  EXPECT_EQ(spec.cpu.dropout, CpuDropoutChoice::fused);
  EXPECT_EQ(spec.resolved["train"]["grad_accum_steps"], 1);
  EXPECT_EQ(spec.resolved["model"]["name"], "tiny-bert");
  EXPECT_TRUE(spec.resolved["model"]["weights"].is_null());
}

// The heartbeat limit is off (0) or long enough that a read between two beats is no sign.
TEST(Spec, HeartbeatTimeoutIsOffOrAtLeastThreeSeconds) {
  EXPECT_EQ(resolve_json(R"({"model": "tiny-bert"})").dist.heartbeat_timeout_s, 15);
  EXPECT_EQ(resolve_json(R"({"model": "tiny-bert", "dist": {"heartbeat_timeout_s": 0}})").dist.heartbeat_timeout_s, 0);
  EXPECT_EQ(resolve_json(R"({"model": "tiny-bert", "dist": {"heartbeat_timeout_s": 3}})").dist.heartbeat_timeout_s, 3);
  const std::string two = input_error_of([] { resolve_json(R"({"model": "tiny-bert", "dist": {"heartbeat_timeout_s": 2}})"); });
  EXPECT_NE(two.find("dist.heartbeat_timeout_s: must be 0 (off) or at least 3"), std::string::npos) << two;
  const std::string negative =
      input_error_of([] { resolve_json(R"({"model": "tiny-bert", "dist": {"heartbeat_timeout_s": -1}})"); });
  EXPECT_NE(negative.find("dist.heartbeat_timeout_s"), std::string::npos) << negative;
}

// The stall limit is off (0: dist.timeout_s alone), or long enough to span a beat's reads and
// short enough to come before dist.timeout_s, which would end the wait first.
TEST(Spec, StallTimeoutIsOffOrBetweenThreeSecondsAndTheTimeout) {
  EXPECT_EQ(resolve_json(R"({"model": "tiny-bert"})").dist.stall_timeout_s, 0);
  EXPECT_EQ(resolve_json(R"({"model": "tiny-bert", "dist": {"stall_timeout_s": 60}})").dist.stall_timeout_s, 60);
  const std::string two = input_error_of([] { resolve_json(R"({"model": "tiny-bert", "dist": {"stall_timeout_s": 2}})"); });
  EXPECT_NE(two.find("dist.stall_timeout_s: must be 0 (at dist.timeout_s) or at least 3"), std::string::npos) << two;
  const std::string late = input_error_of(
      [] { resolve_json(R"({"model": "tiny-bert", "dist": {"stall_timeout_s": 30, "timeout_s": 30}})"); });
  EXPECT_NE(late.find("dist.stall_timeout_s: must be below dist.timeout_s (30), which ends the wait first, got 30"),
            std::string::npos)
      << late;
}

TEST(Spec, YamlAndJsonGiveTheSameSpec) {
  const RunSpec a = resolve_json(R"({"model": "tiny-bert", "precision": "bf16",
      "train": {"batch_size": 4, "lr": 1e-4, "dropout": false}, "data": {"seq_len": 32}})");
  const RunSpec b = resolve_yaml(
      "model: tiny-bert\nprecision: bf16\ntrain:\n  batch_size: 4\n  lr: 1e-4\n  dropout: false\ndata:\n  seq_len: 32\n");
  nlohmann::json ra = a.resolved, rb = b.resolved;
  ra.erase("name");
  rb.erase("name");
  EXPECT_EQ(ra, rb);
}

TEST(Spec, ModelShorthandsExpand) {
  EXPECT_EQ(resolve_json(R"({"model": "tiny-roberta"})").model.name, "tiny-roberta");
  testing::ScratchDir dir;
  const std::string config = dir.write("my-model/config.json", "{}");
  const RunSpec spec = resolve_json(R"({"model": ")" + config + R"("})");
  EXPECT_EQ(spec.model.config, config);
  EXPECT_EQ(spec.model.name, "my-model");
}

TEST(Spec, OverridesSetAnyField) {
  const RunSpec spec = resolve_json(R"({"model": "tiny-bert", "train": {"batch_size": 4}})",
                                    {"train.batch_size=16", "precision=bf16", "model=tiny-distilbert",
                                     "data.seq_len=64", "name=renamed"});
  EXPECT_EQ(spec.train.batch_size, 16);
  EXPECT_EQ(spec.precision, Precision::bf16);
  EXPECT_EQ(spec.model.name, "tiny-distilbert");
  EXPECT_EQ(spec.data.seq_len, 64);
  EXPECT_EQ(spec.name, "renamed");
}

// The short form `--set model=NAME` names the model, as `model: NAME` does in a spec: on a spec
// whose model is a mapping it replaces the name (or the config, for a path) and keeps the rest.
TEST(Spec, AModelOverrideByNameKeepsTheModelsOtherSettings) {
  const std::string mapping = R"({"model": {"name": "tiny-bert", "fused_qkv": true}})";
  const RunSpec renamed = resolve_json(mapping, {"model=tiny-roberta"});
  EXPECT_EQ(renamed.model.name, "tiny-roberta");
  EXPECT_TRUE(renamed.model.fused_qkv);
  EXPECT_TRUE(renamed.model.config.empty());

  testing::ScratchDir dir;
  const std::string config = dir.write("my-model/config.json", "{}");
  const RunSpec configured = resolve_json(mapping, {"model=" + config});
  EXPECT_EQ(configured.model.config, config);
  EXPECT_EQ(configured.model.name, "my-model");
  EXPECT_TRUE(configured.model.fused_qkv);

  // A mapping given on the command line replaces the whole mapping, as any section does.
  EXPECT_FALSE(resolve_json(mapping, {"model={name: tiny-roberta}"}).model.fused_qkv);
  // The checks still to come (the model's name) name the override.
  EXPECT_EQ(resolve_json(mapping, {"model=tiny-bertt"}).where("model.name"), "--set model=tiny-bertt: model.name: ");
}

// A section made by an override alone (`--set plm.probability=0` on a classification spec) is
// blamed on the override, not the file.
TEST(Spec, ASectionMadeByAnOverrideIsBlamedOnIt) {
  const auto message = input_error_of([] { resolve_json(R"({"model": "tiny-bert"})", {"plm.probability=0.5"}); });
  EXPECT_EQ(message.rfind("--set plm.probability=0.5: plm: only used with task plm", 0), 0u) << message;
  // A section the file holds is the file's, whatever an override adds to it.
  const auto in_file = input_error_of(
      [] { resolve_json(R"({"model": "tiny-bert", "plm": {"probability": 0.5}})", {"plm.max_span_length=2"}); });
  EXPECT_EQ(in_file.rfind("spec.json: plm: only used with task plm", 0), 0u) << in_file;
}

TEST(Spec, OverrideErrorsNameTheOverride) {
  const auto message = input_error_of([] { resolve_json(R"({"model": "tiny-bert"})", {"train.batch_size=big"}); });
  EXPECT_NE(message.find("--set train.batch_size=big"), std::string::npos) << message;
  EXPECT_NE(message.find("train.batch_size"), std::string::npos) << message;
  EXPECT_NE(input_error_of([] { resolve_json(R"({"model": "tiny-bert"})", {"oops"}); }).find("key.path=value"),
            std::string::npos);
  EXPECT_NE(input_error_of([] { resolve_json(R"({"model": "tiny-bert"})", {"train.bach_size=3"}); })
                .find("did you mean 'batch_size'"),
            std::string::npos);
}

struct BadSpec {
  std::string name;
  std::string text;
  bool yaml;
  std::vector<std::string> expected;  // fragments the one error message must contain
};

class BadSpecTest : public ::testing::TestWithParam<BadSpec> {};

TEST_P(BadSpecTest, OneClearMessageNamingFileAndField) {
  const BadSpec& c = GetParam();
  const auto message = input_error_of([&] { c.yaml ? resolve_yaml(c.text) : resolve_json(c.text); });
  EXPECT_EQ(message.rfind(c.yaml ? "spec.yaml" : "spec.json", 0), 0u) << message;
  for (const auto& fragment : c.expected) EXPECT_NE(message.find(fragment), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Spec, BadSpecTest,
    ::testing::Values(
        BadSpec{"unknown_top_level_key", R"({"model": "tiny-bert", "epochs": 3})", false,
                {"epochs", "unknown field"}},
        BadSpec{"a_result", R"({"schema": "tbench.result/1", "spec": {"model": "tiny-bert"}, "data": {"corpus": null}})",
                false, {"a tbench result (tbench.result/1), not a run spec", "its \"spec\" section"}},
        BadSpec{"a_sweeps_state", R"({"schema": "tbench.sweep/1", "points": []})", false,
                {"a file tbench writes (tbench.sweep/1), not a run spec"}},
        BadSpec{"unknown_nested_key", R"({"model": "tiny-bert", "train": {"bacth_size": 3}})", false,
                {"train.bacth_size", "did you mean 'batch_size'"}},
        BadSpec{"wrong_type", R"({"model": "tiny-bert", "train": {"batch_size": "32"}})", false,
                {"train.batch_size", "expected an integer", "string"}},
        BadSpec{"float_for_integer", R"({"model": "tiny-bert", "train": {"epochs": 1.5}})", false,
                {"train.epochs", "expected an integer"}},
        BadSpec{"bool_for_integer", R"({"model": "tiny-bert", "threads": true})", false, {"threads", "integer"}},
        BadSpec{"out_of_range", R"({"model": "tiny-bert", "train": {"batch_size": 0}})", false,
                {"train.batch_size", ">= 1"}},
        BadSpec{"negative_lr", R"({"model": "tiny-bert", "train": {"lr": -0.1}})", false, {"train.lr", ">= 0"}},
        BadSpec{"bad_choice", R"({"model": "tiny-bert", "precision": "fp15"})", false,
                {"precision", "fp32, fp16, bf16", "did you mean 'fp16'"}},
        BadSpec{"fp16_on_cpu", R"({"model": "tiny-bert", "precision": "fp16"})", false,
                {"precision", "fp16 needs a CUDA device"}},
        BadSpec{"bad_device", R"({"model": "tiny-bert", "device": "gpu"})", false, {"device", "cpu, cuda or cuda:N"}},
        BadSpec{"bad_cpu_allocator", R"({"model": "tiny-bert", "cpu": {"allocator": "cachng"}})", false,
                {"cpu.allocator", "caching, system", "did you mean 'caching'"}},
        BadSpec{"bad_cpu_dropout", R"({"model": "tiny-bert", "cpu": {"dropout": "fast"}})", false,
                {"cpu.dropout", "fused, torch"}},
        BadSpec{"missing_model", R"({"train": {"epochs": 1}})", false, {"model", "missing"}},
        BadSpec{"model_name_and_config", R"({"model": {"name": "tiny-bert", "config": "x.json"}})", false,
                {"model", "not both"}},
        BadSpec{"missing_config_file", R"({"model": {"config": "/nonexistent/config.json"}})", false,
                {"model.config", "cannot open"}},
        BadSpec{"missing_weights_file", R"({"model": {"name": "tiny-bert", "weights": "/nonexistent.safetensors"}})",
                false, {"model.weights", "cannot open"}},
        BadSpec{"section_not_mapping", R"({"model": "tiny-bert", "train": 5})", false, {"train", "section"}},
        BadSpec{"too_few_samples", R"({"model": "tiny-bert", "data": {"num_samples": 4}, "train": {"batch_size": 8}})",
                false, {"data.num_samples", "fewer than one optimizer step"}},
        BadSpec{"cuda_graph_capture_would_be_timed",
                R"({"model": "tiny-bert", "device": "cuda", "train": {"cuda_graph": true}, "timing": {"warmup_steps": 1}})", false,
                {"timing.warmup_steps", "at least 2 with train.cuda_graph"}},
        BadSpec{"cuda_graph_of_unpadded_batches",
                R"({"model": {"name": "tiny-bert", "unpad": true}, "device": "cuda", "train": {"cuda_graph": true}})",
                false, {"model.unpad", "cannot be captured with train.cuda_graph"}},
        BadSpec{"unknown_placeholder", R"({"model": "tiny-bert", "output": "results/{nme}.json"})", false,
                {"output", "{nme}", "did you mean 'name'"}},
        BadSpec{"json_syntax", "{\"model\": \"tiny-bert\",\n  \"train\": {\"epochs\": }\n}", false,
                {"JSON", "line 2"}},
        BadSpec{"not_an_object", "[1, 2]", false, {"mapping"}},
        BadSpec{"yaml_wrong_type_has_line", "model: tiny-bert\ntrain:\n  epochs: many\n", true,
                {"spec.yaml:3", "train.epochs", "expected an integer"}},
        BadSpec{"yaml_syntax", "model: tiny-bert\ntrain: [1, 2\n", true, {"YAML syntax error"}},
        BadSpec{"yaml_duplicate_key", "model: tiny-bert\nthreads: 1\nthreads: 2\n", true,
                {"spec.yaml:3", "duplicate key"}},
        // Found by review: JSON kept the last of two keys silently; YAML's .nan and .inf were exit 1
        // (std::stod cannot read them); 2^64 - 1 wrapped to -1, "no limit" for max_steps.
        BadSpec{"json_duplicate_key", R"({"model": "tiny-bert", "train": {"seed": 1, "seed": 2}})", false,
                {"train.seed", "duplicate key"}},
        BadSpec{"json_duplicate_top_key", R"({"model": "tiny-bert", "model": "bert-base-cased"})", false,
                {"spec.json: model: duplicate key"}},
        BadSpec{"yaml_nan", "model: tiny-bert\ntrain:\n  lr: .nan\n", true, {"train.lr", "finite number, got .nan"}},
        BadSpec{"yaml_negative_infinity", "model: tiny-bert\ntrain:\n  lr: -.inf\n", true,
                {"train.lr", "finite number, got -.inf"}},
        BadSpec{"integer_past_int64", R"({"model": "tiny-bert", "train": {"max_steps": 18446744073709551615}})", false,
                {"train.max_steps", "expected an integer"}},
        BadSpec{"batch_past_int64", R"({"model": "tiny-bert", "train": {"batch_size": 9223372036854775808}})", false,
                {"train.batch_size", "expected an integer"}},
        // Found by a read of the README against the binary: a NaN integer was "got null", an
        // integer's bound "2.0", "gpu" was offered 'cpu', and a name cut short had no suggestion.
        BadSpec{"yaml_nan_for_integer", "model: tiny-bert\ndata:\n  seq_len: .nan\n", true,
                {"spec.yaml:3", "data.seq_len", "expected an integer, got .nan (number)"}},
        BadSpec{"integer_bound_as_integer", R"({"model": "tiny-bert", "data": {"seq_len": 1}})", false,
                {"data.seq_len", "must be >= 2, got 1"}},
        BadSpec{"gpu_for_device", R"({"model": "tiny-bert", "device": "gpu"})", false,
                {"device", "a GPU is cuda, or cuda:N"}},
        BadSpec{"name_cut_short", R"({"model": "tiny-bert", "timing": {"warmup": 3}})", false,
                {"timing.warmup", "did you mean 'warmup_steps'"}}),
    [](const auto& info) { return info.param.name; });

// A key path with an empty name anywhere, the last one too, is refused ("a." used to set "a").
TEST(Spec, OverridePathsWithAnEmptyNameAreRefused) {
  for (const std::string key : {"train..lr", "train.lr.", ".train"}) {
    SpecDocument doc = parse_spec_text(R"({"model": "tiny-bert"})", "spec.json", false);
    try {
      apply_overrides(doc, {key + "=0.1"});
      ADD_FAILURE() << key;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::bad_input);
      EXPECT_NE(std::string(e.what()).find("empty name in key path"), std::string::npos) << e.what();
    }
  }
}

// Members are assigned by name from the field table: distinct values in neighbouring fields of
// the same type must each land in their own member (an aggregate filled by position would swap
// two of them silently).
TEST(Spec, EveryFieldLandsInItsOwnMember) {
  SpecDocument doc = parse_spec_text(R"({"model": "tiny-bert"})", "spec.json", false);
  apply_overrides(doc, {"train.epochs=3", "train.batch_size=4", "train.warmup_steps=5", "train.grad_accum_steps=6",
                        "train.max_steps=7", "train.seed=8", "train.lr=0.25", "train.weight_decay=0.5",
                        "train.max_grad_norm=0.75", "data.seq_len=9", "data.seed=10", "data.prefetch=11",
                        "data.num_samples=240", "timing.warmup_steps=12", "threads=13", "num_labels=14",
                        "dist.timeout_s=15", "dist.bucket_mb=1.5", "data.padding=longest", "device=cuda:2",
                        "precision=bf16", "model.attention=eager", "train.optimizer_impl=loop",
                        "data.lengths.distribution=uniform", "data.lengths.min=3",
                        "dist.heartbeat_timeout_s=16", "dist.stall_timeout_s=14"});
  const RunSpec s = resolve_spec(doc);
  EXPECT_EQ(s.train.epochs, 3);
  EXPECT_EQ(s.train.batch_size, 4);
  EXPECT_EQ(s.train.warmup_steps, 5);
  EXPECT_EQ(s.train.grad_accum_steps, 6);
  EXPECT_EQ(s.train.max_steps, 7);
  EXPECT_EQ(s.train.seed, 8);
  EXPECT_DOUBLE_EQ(s.train.lr, 0.25);
  EXPECT_DOUBLE_EQ(s.train.weight_decay, 0.5);
  EXPECT_DOUBLE_EQ(s.train.max_grad_norm, 0.75);
  EXPECT_EQ(s.data.seq_len, 9);
  EXPECT_EQ(s.data.seed, 10);
  EXPECT_EQ(s.data.prefetch, 11);
  EXPECT_EQ(s.data.num_samples, 240);
  EXPECT_EQ(s.timing.warmup_steps, 12);
  EXPECT_EQ(s.threads, 13);
  EXPECT_EQ(s.num_labels, 14);
  EXPECT_EQ(s.dist.timeout_s, 15);
  EXPECT_EQ(s.dist.heartbeat_timeout_s, 16);
  EXPECT_EQ(s.dist.stall_timeout_s, 14);
  EXPECT_DOUBLE_EQ(s.dist.bucket_mb, 1.5);
  EXPECT_EQ(s.data.padding, Padding::longest);
  EXPECT_TRUE(s.device.is_cuda());
  EXPECT_EQ(s.device.index, 2);
  EXPECT_EQ(s.precision, Precision::bf16);
  EXPECT_EQ(s.model.attention, AttentionChoice::eager);
  EXPECT_EQ(s.train.optimizer_impl, OptimizerImpl::loop);
  EXPECT_EQ(s.data.lengths.distribution, LengthDistributionKind::uniform);
  EXPECT_EQ(s.data.lengths.min, 3);
  EXPECT_EQ(s.data.source, DataSource::synthetic);
}

TEST(Spec, ChoicesAreSpelledOnceAndRoundTrip) {
  for (const auto& name : choice_list<Padding>()) EXPECT_EQ(to_string(*parse_choice<Padding>(name)), name);
  EXPECT_EQ(choice_list<OptimizerImpl>(), (std::vector<std::string>{"auto", "loop", "foreach", "onepass", "fused"}));
  EXPECT_FALSE(parse_choice<Precision>("fp8").has_value());
  EXPECT_EQ(parse_device("cuda")->text(), "cuda");
  EXPECT_EQ(parse_device("cuda:3")->index, 3);
  EXPECT_FALSE(parse_device("cpu:0").has_value());
  EXPECT_FALSE(parse_device("gpu").has_value());
  // validate --fields lists the same spellings the enums use
  for (const auto& field : spec_field_reference()) {
    if (field["field"] == "data.padding") {
      EXPECT_EQ(field["choices"], nlohmann::json(choice_list<Padding>()));
    }
  }
}

TEST(Spec, QuotedYamlNumbersStayStrings) {
  const auto message = input_error_of([] { resolve_yaml("model: tiny-bert\ntrain:\n  batch_size: \"8\"\n"); });
  EXPECT_NE(message.find("expected an integer"), std::string::npos) << message;
}

TEST(Spec, FileErrorsNameTheFile) {
  const auto missing = input_error_of([] { read_spec_file("/nonexistent/spec.json"); });
  EXPECT_NE(missing.find("/nonexistent/spec.json"), std::string::npos);
  testing::ScratchDir dir;
  const auto path = dir.write("spec.toml", "x = 1");
  EXPECT_NE(input_error_of([&] { read_spec_file(path); }).find(".toml"), std::string::npos);
}

TEST(Spec, EmbeddedDefaultIsValid) {
  const RunSpec spec = load_spec("", {});
  EXPECT_EQ(spec.name, "smoke_cpu");
  EXPECT_EQ(spec.device.text(), "cpu");
}

TEST(Spec, FieldReferenceListsEveryField) {
  const auto fields = spec_field_reference();
  std::vector<std::string> names;
  for (const auto& f : fields) names.push_back(f["field"]);
  for (const char* expected : {"model.name", "train.grad_accum_steps", "timing.warmup_steps", "output"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
}

}  // namespace
}  // namespace tbench
