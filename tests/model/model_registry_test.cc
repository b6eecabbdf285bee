#include "pipette/model/model_registry.h"

#include <gtest/gtest.h>

#include <string>

#include "pipette/model/model_presets.h"

namespace pipette {
namespace {

const Workload kWorkload{1, 256, DType::kBF16};

TEST(ModelRegistry, BuildsPresetsAndFiles) {
  Result<ModelGraph> decoder = MakeModel("llama3-8b", kWorkload);
  ASSERT_TRUE(decoder.ok()) << decoder.status().message();
  EXPECT_EQ(decoder->name, "llama3-8b");
  EXPECT_EQ(decoder->num_layers(), 1 + 2 * 32 + 3u);

  Result<ModelGraph> vlm = MakeModel("vlm-small", kWorkload);
  ASSERT_TRUE(vlm.ok()) << vlm.status().message();
  EXPECT_EQ(vlm->Regions(), (std::vector<std::string>{"vision", "text"}));

  Result<ModelGraph> file =
      MakeModel(std::string(PIPETTE_MODEL_DATA_DIR) + "/tiny.toml", kWorkload);
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file->name, "tiny");
}

TEST(ModelRegistry, UnknownNameIsNotFoundAndSaysHowToListPresets) {
  Result<ModelGraph> model = MakeModel("gpt5", kWorkload);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(model.status().message(),
            "unknown model 'gpt5': `pipette models` lists the presets; a model file's name ends in "
            ".toml (docs/models.md describes the format)");
  EXPECT_EQ(MakeModel("missing.toml", kWorkload).status().code(), StatusCode::kNotFound);
}

TEST(ModelRegistry, BadWorkloadIsInvalidArgument) {
  Result<ModelGraph> model = MakeModel("gpt2-124m", Workload{0, 256, DType::kBF16});
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(), "model 'gpt2-124m': micro_batch_size = 0: must be >= 1");
}

TEST(ModelRegistry, ListsEveryPresetWithItsCount) {
  const std::vector<ModelListing> listing = ListModels();
  ASSERT_EQ(listing.size(), DecoderPresets().size() + TwoTowerPresets().size());
  for (std::size_t i = 0; i < DecoderPresets().size(); ++i) {
    const DecoderSpec& spec = DecoderPresets()[i];
    EXPECT_EQ(listing[i].name, spec.name);
    EXPECT_EQ(listing[i].kind, "decoder");
    EXPECT_EQ(listing[i].source, spec.source);
    EXPECT_EQ(listing[i].published_params, spec.published_params);
    EXPECT_EQ(listing[i].params, MakeModel(spec.name, kWorkload)->TotalParams());
  }
  const ModelListing& vlm = listing.back();
  EXPECT_EQ(vlm.name, "vlm-small");
  EXPECT_EQ(vlm.kind, "two-tower");
  EXPECT_EQ(vlm.params, MakeModel("vlm-small", kWorkload)->TotalParams());
  EXPECT_EQ(vlm.published_params, 0);
}

}  // namespace
}  // namespace pipette
