#pragma once
// A run's configuration, typed: what `runs.config` holds (a JSON object, docs/trace_schema.md).
//
// Writing: one struct per family of runs, turned into JSON by nlohmann-json's own mechanism
// (to_json/from_json found by argument-dependent lookup), with the keys in the order and under the
// conditions the database has always had them:
//   SimulationConfig       pipette simulate --model (engine sim)
//   TimesSimulationConfig  pipette simulate --times (engine sim)
//   TrainingConfig         pipette train (engines cpu and cuda)
//   PredictionConfig       pipette simulate --costs-from RUN (engine sim): the measured run's
//                          configuration, with what predicted it
// Reading: RecordedConfig, what any run's configuration says (any family, any pipette version): a
// key that an older pipette did not write, or that a family does not have, is absent (empty), never
// a default. The key names live in run_config.cc and nowhere else: a misspelt key is a compile
// error, and the readers (compare, fidelity summaries, figures, labels, db merge, predictions) see
// the same values the writers wrote.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pipette {

struct UnevenWork;

// ---- writing: one struct per family
// --------------------------------------------------------------

// A run's uneven work ("uneven"), when it ran any: simulate's and predictions' --rank-speed,
// --microbatch-seqlens (with the reference length and the attention share) and --link-slowdown.
// Empty members are not written.
struct UnevenWorkConfig {
  std::vector<double> rank_speed;
  std::vector<int> microbatch_seqlens;
  int seq_len = 0;               // written with microbatch_seqlens
  double attention_share = 0.0;  // written with microbatch_seqlens
  std::string link_slowdown;     // in --link-slowdown's syntax
};

// The record of `work` (every member, even or not), and the record a run keeps: none for even work.
UnevenWorkConfig UnevenWorkConfigOf(const UnevenWork& work);
std::optional<UnevenWorkConfig> UnevenWorkRecordOf(const UnevenWork& work);

// pipette simulate --model.
struct SimulationConfig {
  std::string model, cluster;
  int nodes = 1;
  std::string schedule;
  int pp = 1, dp = 1, tp = 1, v = 1, m = 1;
  int micro_batch_size = 1, seq_len = 0;
  std::string dtype;
  int zero = 0;
  std::string placement_order, topology;
  bool recompute = false;
  int ep = 1;
  bool alltoall_overlap = false;
  double efficiency = 0.0;
  bool ideal_network = false;
  double latency_us = 0.0;
  int steps = 1;
  std::string grad_reduce;
  bool grad_overlap = false;
  std::int64_t grad_bucket_params = 0;
  std::optional<UnevenWorkConfig> uneven;
};

// pipette simulate --times: a schedule under given F, I, W times (ms), on an ideal network.
struct TimesSimulationConfig {
  std::string schedule;
  int pp = 1, v = 1, m = 1;
  double f_ms = 0.0, i_ms = 0.0, w_ms = 0.0;
  double latency_us = 0.0;
  int steps = 1;
  std::optional<UnevenWorkConfig> uneven;
};

// The architecture a training run resolved its model name to ("architecture"; absent in runs of
// pipette before it was recorded).
struct ArchitectureConfig {
  int layers = 0, hidden = 0, heads = 0, ffn_hidden = 0, vocab = 0, max_positions = 0;
  bool tied_embeddings = false;
};

// pipette train, on the cpu or cuda engine ("engine").
struct TrainingConfig {
  std::string engine, model;
  std::optional<ArchitectureConfig> architecture;
  std::string schedule;
  int p = 1, v = 1, m = 1, pp = 1, dp = 1;  // p and pp alike: pp is the key simulations share
  int steps = 0, micro_batch_size = 1, seq_len = 0;
  std::uint64_t seed = 0;
  double lr = 0.0, weight_decay = 0.0;
  bool verify = false;
  int trace_steps = 0;
  std::string dtype;
  std::optional<bool> virtual_ranks;  // the cuda engine's
  // Uneven work, in the syntax of --rank-speed and --microbatch-seqlens; only when given.
  std::optional<std::string> rank_speed, microbatch_seqlens;
  std::vector<std::vector<std::string>> pieces;  // layer names per piece, in model order
  std::vector<int> stage_piece;                  // the piece each stage runs
};

// One trace file a run was imported from.
struct ImportedTraceConfig {
  std::string file;    // as given on the command line
  std::string sha256;  // of the file's bytes (gzip as stored)
  int rank = 0;        // its distributedInfo.rank
};

// pipette import pytorch: a run measured by PyTorch's pipelining (engine "pytorch"), mapped onto
// pipette's program of its schedule. The program keys as a training run has them; what PyTorch
// wrote it from and how its times were read.
struct ImportedRunConfig {
  std::string engine = "pytorch";
  std::string framework = "pytorch";
  std::string model;  // --model, when given
  std::string schedule;
  std::string schedule_from;  // "given" (--schedule) or "inferred" (from the actions' order)
  int p = 1, v = 1, m = 1, pp = 1, dp = 1;
  int steps = 0, trace_steps = 0;
  std::string annotations;  // "PP:" (_PipelineScheduleRuntime) or "Forward/Backward" (GPipe)
  std::string clock;        // "device" (kernels through their correlation ids) or "host"
  std::vector<ImportedTraceConfig> traces;
};

// How a prediction priced the measured run's program ("prediction").
struct PredictionSettingsConfig {
  std::string costs_from_engine;
  std::string cost_statistic;  // "mean" or "median"
  std::int64_t calibration = 0;
  int cores = 0;
  double latency_s = 0.0, seconds_per_byte = 0.0;
  std::string messages_from;  // "run", "calibration" or "none"
  double instruction_overhead_s = 0.0;
  std::string instruction_overhead_from;  // "run", "calibration" or "none"
  double allreduce_alpha_s = 0.0, allreduce_beta_s_per_byte = 0.0;
  bool alone = false;  // written as "costs": "alone" (the cores' sharing taken out)
  // The fitted cost model that priced the computes (pipette fit; written when not 0): a prediction
  // of a configuration from the fit, not from a run's own measured costs. costs_from is then the
  // measured run of the same configuration it is compared with (0: none, never run).
  std::int64_t fit = 0;
  // With a fit: the steps of the fitted runs' speed variation the simulated steps took in turn
  // (CostFit::step_slowdown; written when not 0).
  int step_slowdowns = 0;
};

// pipette simulate --costs-from RUN: the measured run's configuration with engine "sim", the
// steps simulated, the run it predicts and how. The measured run's configuration is copied as it
// was recorded (a TrainingConfig from pipette train, whatever an older pipette wrote): the
// prediction runs the same program on the same model, and says so in the measured run's words.
struct PredictionConfig {
  nlohmann::ordered_json measured = nlohmann::ordered_json::object();
  int simulated_steps = 0;
  std::int64_t costs_from = 0;
  PredictionSettingsConfig prediction;
  std::optional<UnevenWorkConfig> uneven;
};

void to_json(nlohmann::ordered_json& json, const UnevenWorkConfig& c);
void from_json(const nlohmann::ordered_json& json, UnevenWorkConfig& c);
void to_json(nlohmann::ordered_json& json, const SimulationConfig& c);
void from_json(const nlohmann::ordered_json& json, SimulationConfig& c);
void to_json(nlohmann::ordered_json& json, const TimesSimulationConfig& c);
void from_json(const nlohmann::ordered_json& json, TimesSimulationConfig& c);
void to_json(nlohmann::ordered_json& json, const ArchitectureConfig& c);
void from_json(const nlohmann::ordered_json& json, ArchitectureConfig& c);
void to_json(nlohmann::ordered_json& json, const TrainingConfig& c);
void from_json(const nlohmann::ordered_json& json, TrainingConfig& c);
void to_json(nlohmann::ordered_json& json, const ImportedRunConfig& c);
void from_json(const nlohmann::ordered_json& json, ImportedRunConfig& c);
void to_json(nlohmann::ordered_json& json, const PredictionSettingsConfig& c);
void from_json(const nlohmann::ordered_json& json, PredictionSettingsConfig& c);
void to_json(nlohmann::ordered_json& json, const PredictionConfig& c);
void from_json(const nlohmann::ordered_json& json, PredictionConfig& c);

// ---- reading: any run's configuration
// ------------------------------------------------------------

// The keys that readers look up in any run's configuration, whichever family wrote it.
enum class RunKey {
  kModel,
  kSchedule,
  kP,
  kPp,
  kDp,
  kTp,
  kV,
  kM,
  kMicroBatchSize,
  kSeqLen,
  kLatencyUs,
};
std::string_view NameOf(RunKey key);

// The keys that make two runs the same program, in the order compare checks them.
inline constexpr RunKey kProgramKeys[] = {
    RunKey::kSchedule,       RunKey::kPp,    RunKey::kV, RunKey::kM, RunKey::kDp, RunKey::kModel,
    RunKey::kMicroBatchSize, RunKey::kSeqLen};

// The keys that name a run's program in one line (compare's header, a figure's label).
inline constexpr RunKey kProgramSummaryKeys[] = {RunKey::kSchedule, RunKey::kPp, RunKey::kV,
                                                 RunKey::kM};
// The keys `pipette runs` lists.
inline constexpr RunKey kRunListKeys[] = {RunKey::kModel, RunKey::kSchedule, RunKey::kPp,
                                          RunKey::kDp,    RunKey::kTp,       RunKey::kV,
                                          RunKey::kM};
// Whether `key` says how a run was made or recorded (the command, the engine, its tracing), not
// what ran: labels leave such keys out.
bool DescribesRecording(std::string_view key);

// The scalar keys every one of `configs` (run configurations) has, but those DescribesRecording
// names, whose values are not the same in all of them, in the first one's order: what tells the
// runs apart in labels, legends and tables.
std::vector<std::string> DifferingConfigKeys(const std::vector<nlohmann::ordered_json>& configs);

// A configuration value as labels and tables show it: a string as it is (a .toml file by its
// stem: the directory is no difference to show), any other value as JSON.
std::string ConfigValueText(const nlohmann::ordered_json& value);

// What a recorded run's configuration says. Never fails: a configuration that is not a JSON object
// reads as one without keys, a value of the wrong type as absent.
struct RecordedConfig {
  nlohmann::ordered_json json = nlohmann::ordered_json::object();  // the whole configuration
  bool object = false;  // whether the text was a JSON object

  std::optional<std::string> schedule, model;
  std::optional<int> p, pp, v, m, dp, seq_len;
  std::optional<double> latency_us;                    // a simulation's p2p latency
  std::optional<bool> ideal_network;                   // a simulation's network
  std::optional<std::int64_t> costs_from;              // a prediction: the run it predicts
  std::optional<PredictionSettingsConfig> prediction;  // a prediction: how
  std::optional<UnevenWorkConfig> uneven;              // simulate's and predictions' uneven work
  std::optional<std::string> rank_speed, microbatch_seqlens;  // a training run's

  // The value recorded under `key`, as written (nullptr when absent).
  const nlohmann::ordered_json* Find(RunKey key) const;
};

RecordedConfig ReadRunConfig(std::string_view text);

// The uneven work a run recorded, as one JSON object: simulate's "uneven" with a training run's
// rank_speed and microbatch_seqlens; null when it ran even work.
nlohmann::ordered_json RecordedUnevenWork(const RecordedConfig& config);
// Its microbatch lengths as recorded (null when its microbatches had one length).
nlohmann::ordered_json RecordedMicrobatchSeqlens(const RecordedConfig& config);

// `text` with its references to runs (costs_from), calibrations (prediction.calibration) and fits
// (prediction.fit) rewritten through `runs`, `calibrations` and `fits`; the same text when no
// reference changes.
std::string RemapRunReferences(const std::string& text,
                               const std::map<std::int64_t, std::int64_t>& runs,
                               const std::map<std::int64_t, std::int64_t>& calibrations,
                               const std::map<std::int64_t, std::int64_t>& fits = {});

}  // namespace pipette
