#include "pipette/model/model_registry.h"

#include <fmt/core.h>

#include "pipette/common/printable.h"
#include "pipette/model/decoder.h"
#include "pipette/model/model_presets.h"
#include "pipette/model/model_toml.h"
#include "pipette/model/two_tower.h"

namespace pipette {

Result<ModelGraph> MakeModel(std::string_view name_or_file, const Workload& workload) {
  if (name_or_file.ends_with(".toml")) return LoadModelToml(std::string(name_or_file), workload);
  if (const DecoderSpec* spec = FindDecoderPreset(name_or_file)) {
    return BuildDecoder(*spec, workload);
  }
  if (const TwoTowerSpec* spec = FindTwoTowerPreset(name_or_file)) {
    return BuildTwoTower(*spec, workload);
  }
  return Status::NotFound(fmt::format(
      "unknown model '{}': `pipette models` lists the presets; a model file's name ends in .toml "
      "(docs/models.md describes the format)",
      Printable(name_or_file)));
}

std::vector<ModelListing> ListModels() {
  // Parameters do not depend on the workload: count them on the smallest one.
  const Workload tiny{1, 1, DType::kBF16};
  std::vector<ModelListing> listing;
  for (const DecoderSpec& spec : DecoderPresets()) {
    Result<ModelGraph> model = BuildDecoder(spec, tiny);
    listing.push_back(ModelListing{spec.name, "decoder", model.ok() ? model->TotalParams() : 0,
                                   spec.source, spec.published_params,
                                   model.ok() ? model->ActivatedParams() : 0,
                                   spec.published_activated_params, spec.experts});
  }
  for (const TwoTowerSpec& spec : TwoTowerPresets()) {
    Result<ModelGraph> model = BuildTwoTower(spec, tiny);
    listing.push_back(ModelListing{spec.name, "two-tower", model.ok() ? model->TotalParams() : 0,
                                   spec.source, 0, model.ok() ? model->ActivatedParams() : 0});
  }
  return listing;
}

}  // namespace pipette
