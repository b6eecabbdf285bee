#include "pipette/store/run_config.h"

#include <algorithm>
#include <filesystem>
#include <type_traits>
#include <utility>

#include "pipette/schedule/uneven_work.h"

namespace pipette {
namespace {

using Json = nlohmann::ordered_json;

// Whether `value` has the JSON type a field of type T is read from: integers only from integers
// (a 4.5 is no microbatch count), floating point from any number, strings, booleans; anything else
// (arrays, objects) by nlohmann's own conversion.
template <typename T>
bool HasTypeOf(const Json& value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value.is_boolean();
  } else if constexpr (std::is_integral_v<T>) {
    return value.is_number_integer();
  } else if constexpr (std::is_floating_point_v<T>) {
    return value.is_number();
  } else if constexpr (std::is_same_v<T, std::string>) {
    return value.is_string();
  } else {
    return true;
  }
}

// The tolerant reader: `key`'s value when the configuration has it with the right type (an older
// pipette's run or a hand-written row may lack it or hold another type), else nothing.
template <typename T>
std::optional<T> Get(const Json& json, const char* key) {
  const auto it = json.find(key);
  if (it == json.end() || !HasTypeOf<T>(*it)) return std::nullopt;
  try {
    return it->template get<T>();
  } catch (const nlohmann::json::exception&) {  // an array of the wrong element type
    return std::nullopt;
  }
}

// `field` takes `key`'s value when Get finds one, and keeps what it had otherwise.
template <typename T>
void Read(const Json& json, const char* key, T& field) {
  if (std::optional<T> value = Get<T>(json, key)) field = std::move(*value);
}

template <typename T>
void Read(const Json& json, const char* key, std::optional<T>& field) {
  if (std::optional<T> value = Get<T>(json, key)) field = std::move(value);
}

// Reads an object-valued key into an optional struct (absent unless it is an object).
template <typename T>
void ReadObject(const Json& json, const char* key, std::optional<T>& field) {
  const auto it = json.find(key);
  if (it != json.end() && it->is_object()) field = it->template get<T>();
}

template <typename T>
void WriteIf(Json& json, const char* key, const std::optional<T>& field) {
  if (field) json[key] = *field;
}

}  // namespace

// ---- uneven work
// ---------------------------------------------------------------------------------

void to_json(Json& json, const UnevenWorkConfig& c) {
  json = Json::object();
  if (!c.rank_speed.empty()) json["rank_speed"] = c.rank_speed;
  if (!c.microbatch_seqlens.empty()) {
    json["microbatch_seqlens"] = c.microbatch_seqlens;
    json["seq_len"] = c.seq_len;
    json["attention_share"] = c.attention_share;
  }
  if (!c.link_slowdown.empty()) json["link_slowdown"] = c.link_slowdown;
}

void from_json(const Json& json, UnevenWorkConfig& c) {
  Read(json, "rank_speed", c.rank_speed);
  Read(json, "microbatch_seqlens", c.microbatch_seqlens);
  Read(json, "seq_len", c.seq_len);
  Read(json, "attention_share", c.attention_share);
  Read(json, "link_slowdown", c.link_slowdown);
}

UnevenWorkConfig UnevenWorkConfigOf(const UnevenWork& work) {
  UnevenWorkConfig c;
  c.rank_speed = work.rank_speed;
  c.microbatch_seqlens = work.microbatch_seqlens;
  c.seq_len = work.reference_seqlen;
  c.attention_share = work.attention_share;
  if (!work.link_slowdowns.empty()) c.link_slowdown = FormatLinkSlowdowns(work.link_slowdowns);
  return c;
}

std::optional<UnevenWorkConfig> UnevenWorkRecordOf(const UnevenWork& work) {
  if (work.IsEven()) return std::nullopt;
  return UnevenWorkConfigOf(work);
}

// ---- simulate --model
// ----------------------------------------------------------------------------

void to_json(Json& json, const SimulationConfig& c) {
  json = Json::object();
  json["command"] = "simulate";
  json["model"] = c.model;
  json["cluster"] = c.cluster;
  json["nodes"] = c.nodes;
  json["schedule"] = c.schedule;
  json["pp"] = c.pp;
  json["dp"] = c.dp;
  json["tp"] = c.tp;
  json["v"] = c.v;
  json["m"] = c.m;
  json["micro_batch_size"] = c.micro_batch_size;
  json["seq_len"] = c.seq_len;
  json["dtype"] = c.dtype;
  json["zero"] = c.zero;
  json["placement_order"] = c.placement_order;
  json["topology"] = c.topology;
  json["recompute"] = c.recompute;
  json["ep"] = c.ep;
  json["alltoall_overlap"] = c.alltoall_overlap;
  json["efficiency"] = c.efficiency;
  json["ideal_network"] = c.ideal_network;
  json["latency_us"] = c.latency_us;
  json["steps"] = c.steps;
  json["grad_reduce"] = c.grad_reduce;
  json["grad_overlap"] = c.grad_overlap;
  json["grad_bucket_params"] = c.grad_bucket_params;
  WriteIf(json, "uneven", c.uneven);
}

void from_json(const Json& json, SimulationConfig& c) {
  Read(json, "model", c.model);
  Read(json, "cluster", c.cluster);
  Read(json, "nodes", c.nodes);
  Read(json, "schedule", c.schedule);
  Read(json, "pp", c.pp);
  Read(json, "dp", c.dp);
  Read(json, "tp", c.tp);
  Read(json, "v", c.v);
  Read(json, "m", c.m);
  Read(json, "micro_batch_size", c.micro_batch_size);
  Read(json, "seq_len", c.seq_len);
  Read(json, "dtype", c.dtype);
  Read(json, "zero", c.zero);
  Read(json, "placement_order", c.placement_order);
  Read(json, "topology", c.topology);
  Read(json, "recompute", c.recompute);
  Read(json, "ep", c.ep);
  Read(json, "alltoall_overlap", c.alltoall_overlap);
  Read(json, "efficiency", c.efficiency);
  Read(json, "ideal_network", c.ideal_network);
  Read(json, "latency_us", c.latency_us);
  Read(json, "steps", c.steps);
  Read(json, "grad_reduce", c.grad_reduce);
  Read(json, "grad_overlap", c.grad_overlap);
  Read(json, "grad_bucket_params", c.grad_bucket_params);
  ReadObject(json, "uneven", c.uneven);
}

// ---- simulate --times
// ----------------------------------------------------------------------------

void to_json(Json& json, const TimesSimulationConfig& c) {
  json = Json::object();
  json["command"] = "simulate";
  json["schedule"] = c.schedule;
  json["pp"] = c.pp;
  json["v"] = c.v;
  json["m"] = c.m;
  json["dp"] = 1;
  json["tp"] = 1;
  json["times_ms"] = {{"F", c.f_ms}, {"I", c.i_ms}, {"W", c.w_ms}};
  json["ideal_network"] = true;
  json["latency_us"] = c.latency_us;
  json["steps"] = c.steps;
  WriteIf(json, "uneven", c.uneven);
}

void from_json(const Json& json, TimesSimulationConfig& c) {
  Read(json, "schedule", c.schedule);
  Read(json, "pp", c.pp);
  Read(json, "v", c.v);
  Read(json, "m", c.m);
  if (const auto times = json.find("times_ms"); times != json.end() && times->is_object()) {
    Read(*times, "F", c.f_ms);
    Read(*times, "I", c.i_ms);
    Read(*times, "W", c.w_ms);
  }
  Read(json, "latency_us", c.latency_us);
  Read(json, "steps", c.steps);
  ReadObject(json, "uneven", c.uneven);
}

// ---- pipette train
// -------------------------------------------------------------------------------

void to_json(Json& json, const ArchitectureConfig& c) {
  json = {{"layers", c.layers},
          {"hidden", c.hidden},
          {"heads", c.heads},
          {"ffn_hidden", c.ffn_hidden},
          {"vocab", c.vocab},
          {"max_positions", c.max_positions},
          {"tied_embeddings", c.tied_embeddings}};
}

void from_json(const Json& json, ArchitectureConfig& c) {
  Read(json, "layers", c.layers);
  Read(json, "hidden", c.hidden);
  Read(json, "heads", c.heads);
  Read(json, "ffn_hidden", c.ffn_hidden);
  Read(json, "vocab", c.vocab);
  Read(json, "max_positions", c.max_positions);
  Read(json, "tied_embeddings", c.tied_embeddings);
}

void to_json(Json& json, const TrainingConfig& c) {
  json = Json::object();
  json["engine"] = c.engine;
  json["model"] = c.model;
  WriteIf(json, "architecture", c.architecture);
  json["schedule"] = c.schedule;
  json["p"] = c.p;
  json["v"] = c.v;
  json["m"] = c.m;
  json["pp"] = c.pp;
  json["dp"] = c.dp;
  json["steps"] = c.steps;
  json["micro_batch_size"] = c.micro_batch_size;
  json["seq_len"] = c.seq_len;
  json["seed"] = c.seed;
  json["lr"] = c.lr;
  json["weight_decay"] = c.weight_decay;
  json["verify"] = c.verify;
  json["trace_steps"] = c.trace_steps;
  json["dtype"] = c.dtype;
  WriteIf(json, "virtual_ranks", c.virtual_ranks);
  WriteIf(json, "rank_speed", c.rank_speed);
  WriteIf(json, "microbatch_seqlens", c.microbatch_seqlens);
  json["pieces"] = c.pieces;
  json["stage_piece"] = c.stage_piece;
}

void to_json(Json& json, const ImportedRunConfig& c) {
  json = Json::object();
  json["engine"] = c.engine;
  json["framework"] = c.framework;
  json["model"] = c.model;
  json["schedule"] = c.schedule;
  json["schedule_from"] = c.schedule_from;
  json["p"] = c.p;
  json["v"] = c.v;
  json["m"] = c.m;
  json["pp"] = c.pp;
  json["dp"] = c.dp;
  json["steps"] = c.steps;
  json["trace_steps"] = c.trace_steps;
  json["annotations"] = c.annotations;
  json["clock"] = c.clock;
  Json traces = Json::array();
  for (const ImportedTraceConfig& t : c.traces) {
    traces.push_back({{"file", t.file}, {"sha256", t.sha256}, {"rank", t.rank}});
  }
  json["traces"] = traces;
}

void from_json(const Json& json, ImportedRunConfig& c) {
  Read(json, "engine", c.engine);
  Read(json, "framework", c.framework);
  Read(json, "model", c.model);
  Read(json, "schedule", c.schedule);
  Read(json, "schedule_from", c.schedule_from);
  Read(json, "p", c.p);
  Read(json, "v", c.v);
  Read(json, "m", c.m);
  Read(json, "pp", c.pp);
  Read(json, "dp", c.dp);
  Read(json, "steps", c.steps);
  Read(json, "trace_steps", c.trace_steps);
  Read(json, "annotations", c.annotations);
  Read(json, "clock", c.clock);
  c.traces.clear();
  if (const auto it = json.find("traces"); it != json.end() && it->is_array()) {
    for (const Json& t : *it) {
      ImportedTraceConfig trace;
      Read(t, "file", trace.file);
      Read(t, "sha256", trace.sha256);
      Read(t, "rank", trace.rank);
      c.traces.push_back(trace);
    }
  }
}

void from_json(const Json& json, TrainingConfig& c) {
  Read(json, "engine", c.engine);
  Read(json, "model", c.model);
  ReadObject(json, "architecture", c.architecture);
  Read(json, "schedule", c.schedule);
  Read(json, "p", c.p);
  Read(json, "v", c.v);
  Read(json, "m", c.m);
  Read(json, "pp", c.pp);
  Read(json, "dp", c.dp);
  Read(json, "steps", c.steps);
  Read(json, "micro_batch_size", c.micro_batch_size);
  Read(json, "seq_len", c.seq_len);
  Read(json, "seed", c.seed);
  Read(json, "lr", c.lr);
  Read(json, "weight_decay", c.weight_decay);
  Read(json, "verify", c.verify);
  Read(json, "trace_steps", c.trace_steps);
  Read(json, "dtype", c.dtype);
  Read(json, "virtual_ranks", c.virtual_ranks);
  Read(json, "rank_speed", c.rank_speed);
  Read(json, "microbatch_seqlens", c.microbatch_seqlens);
  Read(json, "pieces", c.pieces);
  Read(json, "stage_piece", c.stage_piece);
}

// ---- simulate --costs-from
// -----------------------------------------------------------------------

void to_json(Json& json, const PredictionSettingsConfig& c) {
  json = {{"costs_from_engine", c.costs_from_engine},
          {"cost_statistic", c.cost_statistic},
          {"calibration", c.calibration},
          {"cores", c.cores},
          {"latency_s", c.latency_s},
          {"seconds_per_byte", c.seconds_per_byte},
          {"messages_from", c.messages_from},
          {"instruction_overhead_s", c.instruction_overhead_s},
          {"instruction_overhead_from", c.instruction_overhead_from},
          {"allreduce_alpha_s", c.allreduce_alpha_s},
          {"allreduce_beta_s_per_byte", c.allreduce_beta_s_per_byte}};
  if (c.alone) json["costs"] = "alone";
  if (c.fit != 0) json["fit"] = c.fit;
  if (c.step_slowdowns != 0) json["step_slowdowns"] = c.step_slowdowns;
}

void from_json(const Json& json, PredictionSettingsConfig& c) {
  Read(json, "costs_from_engine", c.costs_from_engine);
  Read(json, "cost_statistic", c.cost_statistic);
  Read(json, "calibration", c.calibration);
  Read(json, "cores", c.cores);
  Read(json, "latency_s", c.latency_s);
  Read(json, "seconds_per_byte", c.seconds_per_byte);
  Read(json, "messages_from", c.messages_from);
  Read(json, "instruction_overhead_s", c.instruction_overhead_s);
  Read(json, "instruction_overhead_from", c.instruction_overhead_from);
  Read(json, "allreduce_alpha_s", c.allreduce_alpha_s);
  Read(json, "allreduce_beta_s_per_byte", c.allreduce_beta_s_per_byte);
  std::string costs;
  Read(json, "costs", costs);
  c.alone = costs == "alone";
  Read(json, "fit", c.fit);
  Read(json, "step_slowdowns", c.step_slowdowns);
}

void to_json(Json& json, const PredictionConfig& c) {
  json = c.measured.is_object() ? c.measured : Json::object();
  json["engine"] = "sim";
  json["simulated_steps"] = c.simulated_steps;
  json["costs_from"] = c.costs_from;
  json["prediction"] = c.prediction;
  WriteIf(json, "uneven", c.uneven);
}

void from_json(const Json& json, PredictionConfig& c) {
  c.measured = json;
  for (const char* key : {"simulated_steps", "costs_from", "prediction", "uneven"}) {
    c.measured.erase(key);
  }
  Read(json, "simulated_steps", c.simulated_steps);
  Read(json, "costs_from", c.costs_from);
  if (const auto it = json.find("prediction"); it != json.end() && it->is_object()) {
    c.prediction = it->get<PredictionSettingsConfig>();
  }
  ReadObject(json, "uneven", c.uneven);
}

// ---- reading any run's configuration
// -------------------------------------------------------------

std::string_view NameOf(RunKey key) {
  switch (key) {
    case RunKey::kModel:
      return "model";
    case RunKey::kSchedule:
      return "schedule";
    case RunKey::kP:
      return "p";
    case RunKey::kPp:
      return "pp";
    case RunKey::kDp:
      return "dp";
    case RunKey::kTp:
      return "tp";
    case RunKey::kV:
      return "v";
    case RunKey::kM:
      return "m";
    case RunKey::kMicroBatchSize:
      return "micro_batch_size";
    case RunKey::kSeqLen:
      return "seq_len";
    case RunKey::kLatencyUs:
      return "latency_us";
  }
  return "";
}

bool DescribesRecording(std::string_view key) {
  return key == "command" || key == "engine" || key == "trace" || key == "trace_steps" ||
         key == "experiment" || key == "point_key";
}

const Json* RecordedConfig::Find(RunKey key) const {
  const auto it = json.find(NameOf(key));
  return it == json.end() ? nullptr : &*it;
}

RecordedConfig ReadRunConfig(std::string_view text) {
  RecordedConfig c;
  Json json = Json::parse(text, nullptr, false);
  if (!json.is_object()) return c;
  c.json = std::move(json);
  c.object = true;
  const Json& j = c.json;
  Read(j, "schedule", c.schedule);
  Read(j, "model", c.model);
  Read(j, "p", c.p);
  Read(j, "pp", c.pp);
  Read(j, "v", c.v);
  Read(j, "m", c.m);
  Read(j, "dp", c.dp);
  Read(j, "seq_len", c.seq_len);
  Read(j, "latency_us", c.latency_us);
  Read(j, "ideal_network", c.ideal_network);
  Read(j, "costs_from", c.costs_from);
  ReadObject(j, "prediction", c.prediction);
  ReadObject(j, "uneven", c.uneven);
  Read(j, "rank_speed", c.rank_speed);
  Read(j, "microbatch_seqlens", c.microbatch_seqlens);
  return c;
}

Json RecordedUnevenWork(const RecordedConfig& config) {
  Json recorded;
  if (const auto it = config.json.find("uneven"); it != config.json.end()) recorded = *it;
  for (const char* key : {"rank_speed", "microbatch_seqlens"}) {
    if (const auto it = config.json.find(key); it != config.json.end()) recorded[key] = *it;
  }
  return recorded;
}

Json RecordedMicrobatchSeqlens(const RecordedConfig& config) {
  const Json recorded = RecordedUnevenWork(config);
  if (!recorded.is_object()) return nullptr;
  const auto it = recorded.find("microbatch_seqlens");
  return it == recorded.end() ? Json() : *it;
}

std::string RemapRunReferences(const std::string& text,
                               const std::map<std::int64_t, std::int64_t>& runs,
                               const std::map<std::int64_t, std::int64_t>& calibrations,
                               const std::map<std::int64_t, std::int64_t>& fits) {
  Json json = Json::parse(text, nullptr, false);
  if (!json.is_object()) return text;
  bool changed = false;
  const auto remap = [&](Json& value, const std::map<std::int64_t, std::int64_t>& map) {
    if (!value.is_number_integer()) return;
    const auto it = map.find(value.get<std::int64_t>());
    if (it == map.end()) return;
    value = it->second;
    changed = true;
  };
  if (json.contains("costs_from")) remap(json["costs_from"], runs);
  if (json.contains("prediction") && json["prediction"].is_object() &&
      json["prediction"].contains("calibration")) {
    remap(json["prediction"]["calibration"], calibrations);
  }
  if (json.contains("prediction") && json["prediction"].is_object() &&
      json["prediction"].contains("fit")) {
    remap(json["prediction"]["fit"], fits);
  }
  return changed ? json.dump() : text;
}

std::vector<std::string> DifferingConfigKeys(const std::vector<nlohmann::ordered_json>& configs) {
  std::vector<std::string> keys;
  if (configs.empty()) return keys;
  for (const auto& [key, value] : configs.front().items()) {
    if (DescribesRecording(key) || value.is_structured()) continue;
    const bool everywhere = std::all_of(configs.begin(), configs.end(), [&](const auto& c) {
      return c.contains(key) && !c[key].is_structured();
    });
    const bool differs = std::any_of(configs.begin(), configs.end(), [&](const auto& c) {
      return c.contains(key) && c[key] != value;
    });
    if (everywhere && differs) keys.push_back(key);
  }
  return keys;
}

std::string ConfigValueText(const nlohmann::ordered_json& value) {
  if (!value.is_string()) return value.dump();
  const std::string text = value.get<std::string>();
  if (text.ends_with(".toml")) return std::filesystem::path(text).stem().string();
  return text;
}

}  // namespace pipette
