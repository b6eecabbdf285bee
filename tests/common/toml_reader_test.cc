#include "pipette/common/toml_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace pipette {
namespace {

// Parses `text` as file "f.toml", expecting no syntax error.
toml::table MustParse(const TomlOrigin& origin, std::string_view text) {
  Result<toml::table> root = origin.Parse(text);
  EXPECT_TRUE(root.ok()) << root.status().message();
  return root.ok() ? std::move(root).value() : toml::table{};
}

// The document "f.toml" holding `text`, and a reader of its root table. Not copyable: the reader
// points into it.
struct Doc {
  explicit Doc(std::string_view text) : root(MustParse(origin, text)) {}
  Doc(const Doc&) = delete;
  Doc& operator=(const Doc&) = delete;

  const TomlOrigin origin{"f.toml"};
  const toml::table root;
  const TomlTableReader reader{origin, root};
};

// The message of `status`, which must be InvalidArgument.
std::string Message(const Status& status) {
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.message();
  return status.message();
}

TEST(TomlReader, ShowJoinAndFileOrder) {
  const Doc doc("z = 'four'\na = [8, 16]\nm = { bf16 = 989 }\n");
  EXPECT_EQ(ShowToml(*doc.root.get("z")), "'four'");
  EXPECT_EQ(ShowToml(*doc.root.get("a")), "[ 8, 16 ]");
  constexpr std::string_view kThree[] = {"a", "b", "c"};
  EXPECT_EQ(JoinChoices(kThree), "a, b or c");
  EXPECT_EQ(JoinChoices(kThree, "and"), "a, b and c");
  EXPECT_EQ(JoinChoices(std::span(kThree).first(1)), "a");
  std::vector<std::string> keys;
  for (const auto& [key, node] : InFileOrder(doc.root)) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"z", "a", "m"}));
}

TEST(TomlReader, SyntaxErrorsNameLineAndColumnInEitherStyle) {
  const Status lined = TomlOrigin("f.toml").Parse("a = 1\nb = = 2\n").status();
  EXPECT_EQ(Message(lined).rfind("f.toml:2:", 0), 0u) << lined.message();
  const Status labelled =
      TomlOrigin("c.toml", "cluster file 'c.toml'").Parse("a = 1\nb = = 2\n").status();
  EXPECT_EQ(Message(labelled).rfind("cluster file 'c.toml': line 2, column ", 0), 0u)
      << labelled.message();
}

TEST(TomlReader, IntegersRequiredOptionalAndRanged) {
  const Doc doc("n = 4\nbig = 99\nf = 2.5\n");
  const TomlTableReader& reader = doc.reader;
  EXPECT_EQ(*reader.Integer("n", {1, 10}), 4);
  EXPECT_EQ(*reader.Integer("absent", {1, 10}, 7), 7);
  EXPECT_FALSE(reader.FindInteger("absent", {1, 10})->has_value());
  EXPECT_EQ(Message(reader.Integer("absent", {1, 10}).status()), "f.toml:1: missing key 'absent'");
  EXPECT_EQ(Message(reader.Integer("n", {5, 10}).status()), "f.toml:1: n = 4: must be >= 5");
  EXPECT_EQ(Message(reader.Integer("big", {1, 10}).status()),
            "f.toml:2: big = 99: more than the limit of 10");
  EXPECT_EQ(Message(reader.Integer("f", {1, 10}).status()),
            "f.toml:3: f = 2.5: must be an integer");
}

TEST(TomlReader, NumbersAreFiniteAndWithinTheirRange) {
  const Doc doc("i = 3\nx = 0.5\nneg = -1.5\nzero = 0\ninf = inf\ns = 'x'\nbig = 2e6\n");
  const TomlTableReader& reader = doc.reader;
  EXPECT_DOUBLE_EQ(*reader.Number("i", {}), 3.0);
  EXPECT_DOUBLE_EQ(*reader.Number("x", {}), 0.5);
  EXPECT_DOUBLE_EQ(*reader.Number("absent", {}, 1.25), 1.25);
  EXPECT_EQ(Message(reader.Number("neg", {}).status()), "f.toml:3: neg = -1.5: must be >= 0");
  EXPECT_EQ(Message(reader.Number("zero", {.min_exclusive = true}).status()),
            "f.toml:4: zero = 0: must be > 0");
  EXPECT_EQ(Message(reader.Number("inf", {}).status()),
            "f.toml:5: inf = inf: must be a finite number");
  EXPECT_EQ(Message(reader.Number("neg", {.rule = "a finite number >= 0"}).status()),
            "f.toml:3: neg = -1.5: must be a finite number >= 0");
  EXPECT_EQ(Message(reader.Number("s", {}).status()), "f.toml:6: s = 'x': must be a number");
  EXPECT_EQ(Message(reader.Number("big", {.max = 1e6}).status()),
            "f.toml:7: big = 2000000.0: more than the limit of 1e+06");
}

TEST(TomlReader, BoolsStringsAndChoices) {
  const Doc doc("b = true\nn = 1\ns = 'text'\ne = ''\nt = 'torus'\n");
  const TomlTableReader& reader = doc.reader;
  EXPECT_TRUE(*reader.Bool("b"));
  EXPECT_FALSE(*reader.Bool("absent", false));
  EXPECT_EQ(Message(reader.Bool("n").status()), "f.toml:2: n = 1: must be true or false");
  EXPECT_EQ(*reader.String("s"), "text");
  EXPECT_EQ(*reader.String("absent", "main"), "main");
  EXPECT_EQ(Message(reader.String("n").status()), "f.toml:2: n = 1: must be a string");
  EXPECT_EQ(Message(reader.String("e").status()), "f.toml:4: e = '': must not be empty");
  EXPECT_EQ(**reader.FindString("e", Presence::kOptional, EmptyString::kAllowed), "");
  constexpr std::string_view kTopologies[] = {"fat-tree", "single-switch"};
  EXPECT_EQ(*reader.Choice("absent", kTopologies, "topology", "fat-tree"), "fat-tree");
  EXPECT_EQ(Message(reader.Choice("t", kTopologies, "topology").status()),
            "f.toml:5: t = 'torus': unknown topology (expected fat-tree or single-switch)");
}

// A name with an ESC or BEL was printed raw by every command that shows it (simulate, partition,
// runs): strings in a file are printable, a line break or tab allowed in free text only.
TEST(TomlReader, StringsWithControlBytesAreRefusedNamingThePosition) {
  const Doc doc(
      "name = \"ab\\u001b[2J\"\nbell = \"\\u0007\"\nsource = \"line one\\nline\\u0001two\"\n"
      "in = ['ok', \"x\\u0000y\"]\n");
  const TomlTableReader& reader = doc.reader;
  EXPECT_EQ(Message(reader.String("name").status()),
            "f.toml:1: name = 'ab\\x1b[2J': a control byte at position 3: strings in a file must "
            "be printable");
  EXPECT_EQ(Message(reader.String("bell").status()),
            "f.toml:2: bell = '\\x07': a control byte at position 1: strings in a file must be "
            "printable");
  EXPECT_EQ(*reader.String("source"), "line one\nline\x01two");  // free text, printed escaped
  EXPECT_EQ(Message(reader.FindStringArray("in", "names").status()),
            "f.toml:4: in: 'x\\x00y' has a control byte at position 2: strings in a file must be "
            "printable");
}

TEST(TomlReader, TablesAndStringArrays) {
  const Doc doc("in = ['a', 'b']\ntwice = ['a', 'a']\nnum = [1]\nflat = 3\n[sub]\nk = 1\n");
  const TomlTableReader& reader = doc.reader;
  const toml::table* sub = *reader.FindTable("sub");
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(*reader.FindTable("absent"), nullptr);
  EXPECT_EQ(Message(reader.FindTable("absent", Presence::kRequired).status()),
            "f.toml:1: missing key 'absent'");
  EXPECT_EQ(Message(reader.FindTable("flat", Presence::kOptional, " ([flat])").status()),
            "f.toml:4: flat = 3: must be a table ([flat])");
  EXPECT_EQ(**reader.FindStringArray("in", "names"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Message(reader.FindStringArray("twice", "names").status()),
            "f.toml:2: twice = [ 'a', 'a' ]: lists 'a' twice");
  EXPECT_EQ(Message(reader.FindStringArray("num", "names").status()),
            "f.toml:3: num = [ 1 ]: every element must be a non-empty string");
  EXPECT_EQ(Message(reader.FindStringArray("flat", "names").status()),
            "f.toml:4: flat = 3: must be an array of names");
}

TEST(TomlReader, UnknownKeysAreNamedWithTheAllowedOnes) {
  const Doc doc("name = 'x'\n[gpu]\nmemory_GB = 80\nname = 'g'\n");
  const TomlTableReader gpu(doc.origin, *doc.root.get("gpu")->as_table(), "gpu.");
  constexpr std::string_view kGpuKeys[] = {"name", "memory_gb"};
  EXPECT_EQ(Message(gpu.RejectUnknownKeys(kGpuKeys)),
            "f.toml:3: unknown key 'gpu.memory_GB' (expected name or memory_gb)");
  EXPECT_EQ(Message(gpu.RejectUnknownKeys(kGpuKeys, "{key}: unknown key (a gpu has {expected})")),
            "f.toml:3: gpu.memory_GB: unknown key (a gpu has name or memory_gb)");
  constexpr std::string_view kRootKeys[] = {"name", "gpu"};
  EXPECT_TRUE(doc.reader.RejectUnknownKeys(kRootKeys).ok());
}

TEST(TomlReader, ContextLabelAndMissingMessage) {
  const TomlOrigin labelled("c.toml", "cluster file 'c.toml'");
  const toml::table root = MustParse(labelled, "[gpu]\nmemory_gb = -1\n");
  TomlTableReader gpu(labelled, *root.get("gpu")->as_table(), "gpu.");
  gpu.set_missing_message("{key} is missing (required unless `base` names a preset)");
  EXPECT_EQ(Message(gpu.String("name").status()),
            "cluster file 'c.toml': gpu.name is missing (required unless `base` names a preset)");
  EXPECT_EQ(Message(gpu.Number("memory_gb", {.min_exclusive = true}).status()),
            "cluster file 'c.toml': gpu.memory_gb = -1: must be > 0");

  const TomlOrigin origin("m.toml");
  const toml::table model = MustParse(origin, "[[layer]]\nname = 'x'\nheads = 'four'\n");
  TomlTableReader layer(origin, *model.get("layer")->as_array()->get(0)->as_table());
  layer.set_context("layer 'x'");
  EXPECT_EQ(Message(layer.Integer("heads", {1, 64}).status()),
            "m.toml:3: layer 'x': heads = 'four': must be an integer");
  EXPECT_EQ(Message(layer.Integer("hidden", {1, 64}).status()),
            "m.toml:1: layer 'x': missing key 'hidden'");
}

}  // namespace
}  // namespace pipette
