#include "pipette/model/model_toml.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "pipette/model/decoder.h"

namespace pipette {
namespace {

const std::string kTiny = std::string(PIPETTE_MODEL_DATA_DIR) + "/tiny.toml";
const Workload kWorkload{2, 64, DType::kBF16};  // 128 tokens per microbatch, 2 bytes each

ModelGraph MustParse(std::string_view text) {
  Result<ModelGraph> model = ParseModelToml(text, "m.toml", kWorkload);
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.ok() ? std::move(model).value() : ModelGraph{};
}

std::string ErrorOf(std::string_view text) {
  Result<ModelGraph> model = ParseModelToml(text, "m.toml", kWorkload);
  EXPECT_FALSE(model.ok()) << "accepted:\n" << text;
  if (model.ok()) return "";
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  return model.status().message();
}

std::vector<std::string> Names(const ModelGraph& model) {
  std::vector<std::string> names;
  for (std::size_t v = 0; v < model.num_layers(); ++v) names.push_back(model.layer(v).name);
  return names;
}

std::int64_t EdgeBytes(const ModelGraph& model, LayerId from, LayerId to) {
  auto [edge, found] = boost::edge(from, to, model.graph);
  EXPECT_TRUE(found) << model.layer(from).name << " -> " << model.layer(to).name;
  return found ? model.graph[edge].bytes : -1;
}

TEST(ModelToml, LoadsTheExampleFile) {
  Result<ModelGraph> loaded = LoadModelToml(kTiny, kWorkload);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const ModelGraph& model = *loaded;
  EXPECT_EQ(model.name, "tiny");
  EXPECT_EQ(Names(model),
            (std::vector<std::string>{"embedding", "block0.attn", "block0.mlp", "block1.attn",
                                      "block1.mlp", "adapter", "final_norm", "head", "loss"}));
  const std::int64_t embedding = (1000 + 128) * 64;
  const std::int64_t block0 = (2 * 64 + 4 * 64 * 64 + 4 * 64) + (2 * 64 + 2 * 64 * 256 + 256 + 64);
  const std::int64_t block1 = (64 + 2 * 64 * 64 + 2 * 64 * 32) + (64 + 3 * 64 * 172);
  const std::int64_t adapter = 16384, final_norm = 2 * 64, head = 0;
  EXPECT_EQ(model.TotalParams(), embedding + block0 + block1 + adapter + final_norm + head);
  EXPECT_EQ(model.TotalParams(), 184'128);

  // The adapter takes the previous layer by default; the final norm takes both.
  EXPECT_EQ(boost::num_edges(model.graph), 9u);
  EXPECT_EQ(EdgeBytes(model, 4, 5), 128 * 64 * 2);
  EXPECT_EQ(EdgeBytes(model, 4, 6), 128 * 64 * 2);
  EXPECT_EQ(EdgeBytes(model, 5, 6), 128 * 128);  // the adapter's 128 bytes per token
  EXPECT_EQ(EdgeBytes(model, 7, 8), 128 * 1000 * 2);
  Result<std::vector<LayerId>> order = model.TopologicalOrder();
  ASSERT_TRUE(order.ok());
  for (std::size_t v = 0; v < order->size(); ++v) EXPECT_EQ((*order)[v], v);

  EXPECT_EQ(model.attributes.blocks, 2);
  EXPECT_EQ(model.attributes.hidden, 64);
  EXPECT_EQ(model.attributes.heads, 4);
  EXPECT_EQ(model.attributes.kv_heads, 2);  // gcd(4, 2): a tp dividing it divides every layer's
  EXPECT_EQ(model.attributes.vocab, 1000);
  EXPECT_EQ(model.Regions(), (std::vector<std::string>{"main"}));
}

TEST(ModelToml, UsesTheDecoderFormulas) {
  const DecoderSpec spec{.name = "gpt-mini",
                         .layers = 2,
                         .hidden = 64,
                         .heads = 4,
                         .kv_heads = 4,
                         .ffn_hidden = 256,
                         .vocab = 1000,
                         .tied_embeddings = true,
                         .gated_mlp = false,
                         .bias = true,
                         .published_params = 0,
                         .source = "",
                         .learned_positions = true,
                         .max_positions = 128};
  Result<ModelGraph> built = BuildDecoder(spec, kWorkload);
  ASSERT_TRUE(built.ok()) << built.status().message();
  std::string text = R"(name = "gpt-mini"
[[layer]]
name = "embedding"
type = "embedding"
vocab = 1000
hidden = 64
positions = 128
)";
  for (int i = 0; i < 2; ++i) {
    text += "[[layer]]\nname = \"block" + std::to_string(i) +
            ".attn\"\ntype = \"attention\"\nhidden = 64\nheads = 4\nbias = true\n";
    text += "[[layer]]\nname = \"block" + std::to_string(i) +
            ".mlp\"\ntype = \"mlp\"\nhidden = 64\nffn_hidden = 256\nbias = true\n";
  }
  text += R"([[layer]]
name = "final_norm"
type = "norm"
hidden = 64
bias = true
[[layer]]
name = "head"
type = "head"
hidden = 64
vocab = 1000
tied = true
[[layer]]
name = "loss"
type = "loss"
vocab = 1000
)";
  const ModelGraph parsed = MustParse(text);
  ASSERT_EQ(parsed.num_layers(), built->num_layers());
  for (std::size_t v = 0; v < parsed.num_layers(); ++v) {
    const Layer& a = parsed.layer(v);
    const Layer& b = built->layer(v);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.type, b.type);
    EXPECT_EQ(a.params, b.params) << a.name;
    EXPECT_DOUBLE_EQ(a.fwd_flops, b.fwd_flops) << a.name;
    EXPECT_DOUBLE_EQ(a.igrad_flops, b.igrad_flops) << a.name;
    EXPECT_DOUBLE_EQ(a.wgrad_flops, b.wgrad_flops) << a.name;
    EXPECT_EQ(a.activation_bytes, b.activation_bytes) << a.name;
    EXPECT_EQ(a.activation_bytes_recompute, b.activation_bytes_recompute) << a.name;
    EXPECT_EQ(a.wgrad_input_bytes, b.wgrad_input_bytes) << a.name;
    EXPECT_EQ(a.output_bytes, b.output_bytes) << a.name;
    EXPECT_EQ(a.hbm_bytes, b.hbm_bytes) << a.name;
    EXPECT_EQ(a.tp_allreduce_bytes, b.tp_allreduce_bytes) << a.name;
    EXPECT_EQ(a.tp_sharded, b.tp_sharded) << a.name;
  }
  EXPECT_EQ(boost::num_edges(parsed.graph), boost::num_edges(built->graph));
  EXPECT_EQ(parsed.attributes.blocks, built->attributes.blocks);
  EXPECT_EQ(parsed.attributes.heads, built->attributes.heads);
  EXPECT_EQ(parsed.attributes.kv_heads, built->attributes.kv_heads);
}

TEST(ModelToml, CustomAmountsArePerTokenWithDefaults) {
  const ModelGraph model = MustParse(R"(
[[layer]]
name = "in"
type = "linear"
in = 16
out = 32
[[layer]]
name = "weighted"
type = "custom"
fwd_flops = 1000
params = 50
activation_bytes = 10
output_bytes = 8
[[layer]]
name = "weightless"
type = "custom"
fwd_flops = 2.5
params = 0
activation_bytes = 0
output_bytes = 4
tp_sharded = true
tp_allreduce_bytes = 4
hbm_bytes = 7
)");
  const std::int64_t t = 128;
  const Layer& weighted = model.layer(1);
  EXPECT_DOUBLE_EQ(weighted.fwd_flops, 1000.0 * t);
  EXPECT_DOUBLE_EQ(weighted.igrad_flops, 1000.0 * t);  // default: fwd_flops
  EXPECT_DOUBLE_EQ(weighted.wgrad_flops, 1000.0 * t);  // default with params: fwd_flops
  EXPECT_EQ(weighted.params, 50);
  EXPECT_EQ(weighted.activation_bytes, 10 * t);
  EXPECT_EQ(weighted.output_bytes, 8 * t);
  EXPECT_EQ(weighted.activation_bytes_recompute, 32 * 2 * t);  // its input
  EXPECT_EQ(weighted.wgrad_input_bytes, 32 * 2 * t);
  EXPECT_EQ(weighted.hbm_bytes, 50 * 2 + 8 * t + 32 * 2 * t);  // weights, output, input
  EXPECT_FALSE(weighted.tp_sharded);
  const Layer& weightless = model.layer(2);
  EXPECT_DOUBLE_EQ(weightless.fwd_flops, 2.5 * t);
  EXPECT_DOUBLE_EQ(weightless.wgrad_flops, 0);  // default without params: 0
  EXPECT_EQ(weightless.wgrad_input_bytes, 0);
  EXPECT_EQ(weightless.hbm_bytes, 7 * t);
  EXPECT_EQ(weightless.tp_allreduce_bytes, 4 * t);
  EXPECT_TRUE(weightless.tp_sharded);
  EXPECT_EQ(model.attributes.blocks, 0);
  EXPECT_EQ(model.attributes.heads, 0);
  EXPECT_EQ(model.attributes.hidden, 0);
}

TEST(ModelToml, AddsLayersInATopologicalOrderThatKeepsTheFileOrder) {
  // "late" is listed first but consumes "b"; "a" and "b" are independent sources.
  const ModelGraph model = MustParse(R"(
[[layer]]
name = "late"
type = "linear"
in = 8
out = 8
inputs = ["b"]
[[layer]]
name = "a"
type = "linear"
in = 8
out = 8
inputs = []
[[layer]]
name = "b"
type = "linear"
in = 8
out = 8
region = "side"
)");
  EXPECT_EQ(Names(model), (std::vector<std::string>{"a", "b", "late"}));
  EXPECT_EQ(EdgeBytes(model, 0, 1), 128 * 8 * 2);  // b defaults to the layer before it, a
  EXPECT_EQ(EdgeBytes(model, 1, 2), 128 * 8 * 2);
  EXPECT_EQ(model.layer(1).region, "side");
  Result<std::vector<LayerId>> order = model.TopologicalOrder();
  ASSERT_TRUE(order.ok());
  EXPECT_EQ(*order, (std::vector<LayerId>{0, 1, 2}));
}

TEST(ModelToml, DefaultNameIsTheFileStem) {
  Result<ModelGraph> model = ParseModelToml("[[layer]]\nname = \"l\"\ntype = \"loss\"\nvocab = 4\n",
                                            "dir/my-model.toml", kWorkload);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(model->name, "my-model");
}

TEST(ModelToml, ErrorsNameFileLineLayerKeyValueAndRule) {
  EXPECT_EQ(ErrorOf("[[layer]]\nname = \"x\"\ntype = \"conv\"\n"),
            "m.toml:3: layer 'x': type = 'conv': unknown layer type (expected embedding, "
            "attention, mlp, moe, norm, head, loss, linear or custom)");
  EXPECT_EQ(ErrorOf("[[layer]]\nname = \"a\"\ntype = \"loss\"\nvocab = 10\n"
                    "[[layer]]\nname = \"b\"\ntype = \"loss\"\nvocab = 10\ninputs = [\"c\"]\n"),
            "m.toml:9: layer 'b': inputs = [ 'c' ]: no layer is named 'c'");
  EXPECT_EQ(ErrorOf("[[layer]]\nname = \"a\"\ntype = \"loss\"\nvocab = 10\n"
                    "[[layer]]\nname = \"a\"\ntype = \"loss\"\nvocab = 10\n"),
            "m.toml:6: layer 'a': name = 'a': duplicate name (layer #1 has it already)");
  EXPECT_EQ(ErrorOf("[[layer]]\nname = \"a\"\ntype = \"norm\"\nhidden = 8\ninputs = [\"c\"]\n"
                    "[[layer]]\nname = \"b\"\ntype = \"norm\"\nhidden = 8\n"
                    "[[layer]]\nname = \"c\"\ntype = \"norm\"\nhidden = 8\n"),
            "m.toml:5: layer 'a': the inputs form a cycle (a -> b -> c -> a): a model graph must "
            "be acyclic");
  EXPECT_EQ(ErrorOf("[[layer]]\nname = \"a\"\ntype = \"norm\"\nhidden = 8\ninputs = [\"a\"]\n"),
            "m.toml:5: layer 'a': the inputs form a cycle (a -> a): a model graph must be acyclic");
  EXPECT_EQ(ErrorOf("[[layer]]\nname = \"x\"\ntype = \"attention\"\nhidden = 64\n"),
            "m.toml:1: layer 'x': missing key 'heads': a layer of type attention needs hidden and "
            "heads");
  EXPECT_EQ(ErrorOf("[[layer]]\ntype = \"norm\"\nhidden = 8\n"),
            "m.toml:1: layer #1: missing key 'name'");
  EXPECT_EQ(ErrorOf("[[layer]]\nname = \"x\"\ntype = \"norm\"\nhiden = 8\n"),
            "m.toml:4: layer 'x': unknown key 'hiden' for type norm (expected name, type, region, "
            "inputs, hidden or bias)");
  EXPECT_EQ(ErrorOf("[[layer]]\nname = \"x\"\ntype = \"attention\"\nhidden = 64\nheads = 5\n"),
            "m.toml:5: layer 'x': heads = 5: hidden = 64 must be divisible by heads");
  EXPECT_EQ(ErrorOf("[[layer]]\nname = \"x\"\ntype = \"attention\"\nhidden = 64\nheads = "
                    "\"four\"\n"),
            "m.toml:5: layer 'x': heads = 'four': must be an integer");
  EXPECT_EQ(ErrorOf("[[layer]]\nname = \"x\"\ntype = \"mlp\"\nhidden = 0\nffn_hidden = 8\n"),
            "m.toml:4: layer 'x': hidden = 0: must be >= 1");
  EXPECT_EQ(ErrorOf("[[layer]]\nname = \"x\"\ntype = \"custom\"\nfwd_flops = -1\nparams = 0\n"
                    "activation_bytes = 0\noutput_bytes = 0\n"),
            "m.toml:4: layer 'x': fwd_flops = -1: must be a finite number >= 0");
  EXPECT_EQ(ErrorOf("[[layer]]\nname = \"x\"\ntype = \"norm\"\nhidden = 8\nbias = 1\n"),
            "m.toml:5: layer 'x': bias = 1: must be true or false");
  EXPECT_EQ(ErrorOf("name = \"m\"\n"),
            "m.toml:1: no [[layer]] tables: a model needs at least one layer");
  EXPECT_EQ(ErrorOf("[layer]\nname = \"x\"\n"),
            "m.toml:1: layer must be an array of tables: write each layer as [[layer]]");
  EXPECT_EQ(ErrorOf("nmae = \"m\"\n[[layer]]\nname = \"l\"\ntype = \"loss\"\nvocab = 4\n"),
            "m.toml:1: unknown top-level key 'nmae' (expected name and [[layer]] tables)");
  EXPECT_EQ(ErrorOf("name = \"m\"\n[[layer]\n").rfind("m.toml:2:", 0), 0u);  // TOML syntax
}

TEST(ModelToml, MissingFileIsNotFound) {
  Result<ModelGraph> model = LoadModelToml("no/such/model.toml", kWorkload);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(model.status().message(), "model file 'no/such/model.toml': no such file");
}

// A file of a few thousand layers that each list a thousand inputs: 64 MB of text took 4.3 GB and
// 17 s to read (and a duplicate check quadratic in the inputs before that). Refused before it is
// parsed, with the estimate (numbers and inline tables counted too); the largest chain the layer
// limit allows is not.
std::string DenseGraph(int layers, int inputs_per_layer) {
  std::string text = "name = \"dense\"\n";
  for (int i = 0; i < layers; ++i) {
    text += "[[layer]]\nname = \"" + std::to_string(i) +
            "\"\ntype = \"custom\"\nfwd_flops = 1\nparams = 1\nactivation_bytes = 1\n"
            "output_bytes = 1\n";
    if (i == 0) continue;
    text += "inputs = [";
    for (int j = std::max(0, i - inputs_per_layer); j < i; ++j) {
      text += "\"" + std::to_string(j) + (j + 1 < i ? "\"," : "\"");
    }
    text += "]\n";
  }
  return text;
}

TEST(ModelToml, AFileThatWouldTakeGigabytesIsRefusedWithTheEstimateBeforeItIsParsed) {
  const std::string dense = DenseGraph(6000, 1000);  // 5.5 million inputs, 40 MB of text
  // At least the measured rates: 6000 tables; the model's name, each layer's name and type, and
  // 999 * 1000 / 2 + 5000 * 1000 inputs at 440 bytes (the separators add at most a fifth).
  const double measured_rates = 6000 * 3400.0 + (1 + 2 * 6000 + 5'499'500) * 440.0;
  EXPECT_GE(EstimateModelFileMemory(dense), measured_rates);
  EXPECT_LE(EstimateModelFileMemory(dense), 1.2 * measured_rates);
  // Refused before the parse: text that is not TOML after it changes nothing.
  const std::string error = ErrorOf(dense + "\n= not toml [[");
  EXPECT_EQ(error.rfind("m.toml: reading it would take about 2.", 0), 0u) << error;
  EXPECT_NE(error.find(" GB of memory (3.4 KB per layer, 440 bytes per string (name, type or "
                       "input) and 75 per other value), more than the 2 GB a model file may take: "
                       "a model graph needs a few inputs per layer, not thousands"),
            std::string::npos)
      << error;
  // 16 M numbers in one array (32 MB) took 1.19 GB; 32 M take twice that and are refused.
  const std::string numbers = "x = [" + std::string(2 * 32'000'000, ',') + "]";
  EXPECT_GE(EstimateModelFileMemory(numbers), 2.38e9);
  // A layer written as an inline table counts as one.
  EXPECT_EQ(EstimateModelFileMemory("layer = [{}, {}]"), 2 * 3400.0 + 2 * 75.0);  // = and ,
  // A dense graph of 80 thousand inputs is read (and checked exactly).
  const ModelGraph read = MustParse(DenseGraph(400, 399));
  EXPECT_EQ(read.num_layers(), 400u);
  EXPECT_EQ(boost::num_edges(read.graph), 400u * 399 / 2);
  // The largest chain: 262,144 layers of two strings each, 1.1 GB measured, under the limit.
  std::string chain;
  for (int i = 0; i < (1 << 18); ++i) chain += "[[layer]]\nname = \"l\"\ntype = \"norm\"\n";
  EXPECT_LT(EstimateModelFileMemory(chain), kMaxModelFileMemory);
  EXPECT_GT(EstimateModelFileMemory(chain), 1.1e9);
}

TEST(ModelToml, RejectsABadWorkload) {
  Result<ModelGraph> model = LoadModelToml(kTiny, Workload{1, 0, DType::kBF16});
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().message(), kTiny + ": seq_len = 0: must be >= 1");
}

}  // namespace
}  // namespace pipette
