#include "pipette/fidelity/cost_fit.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "pipette/common/printable.h"
#include "pipette/engine/decoder_layers.h"
#include "pipette/fidelity/recorded_work.h"
#include "pipette/store/kernel_metrics.h"
#include "pipette/store/run_config.h"

namespace pipette {

namespace {

constexpr std::string_view kUnits[kCostParameters] = {
    "s/FLOP",    "s/element", "s/element", "s/element", "s/call",        "s/element",
    "s/element", "s/element", "s/element", "s/module",  "s/instruction", "s/parameter"};

constexpr ActionKind kComputeKinds[] = {ActionKind::kForward, ActionKind::kInputBackward,
                                        ActionKind::kWeightBackward, ActionKind::kFullBackward};

// The features of one compute kind of a stage: its passes' op counts and one instruction.
std::vector<double> FeaturesOf(const LayerWork& work, ActionKind kind) {
  OpCounts ops;
  if (kind == ActionKind::kForward) ops += work.f;
  if (kind == ActionKind::kInputBackward || kind == ActionKind::kFullBackward) ops += work.i;
  if (kind == ActionKind::kWeightBackward || kind == ActionKind::kFullBackward) ops += work.w;
  std::vector<double> row(ops.features.begin(), ops.features.end());
  row.resize(kCostParameters, 0);
  row[kInstructions] = 1;
  return row;
}

std::vector<double> OptimizerFeatures(double params) {
  std::vector<double> row(kCostParameters, 0);
  row[kOptimizerParams] = params;
  return row;
}

double Predicted(const std::vector<double>& row, const std::vector<double>& values) {
  double t = 0;
  for (int k = 0; k < kCostParameters; ++k) t += row[k] * values[k];
  return t;
}

// The work of one layer of ModuleKind `kind` of the plan's model (its first such layer; the
// decoder's blocks are alike).
Result<LayerWork> ModuleWork(const TrainPlan& plan, int kind) {
  for (const std::string& layer : LayerNames(plan.spec)) {
    if (ModuleKindOf(layer) == kind) {
      return LayerOps(plan.spec, layer, {plan.micro_batch_size, plan.seq_len});
    }
  }
  return Status::NotFound(fmt::format("no {} layer", ModuleKindName(kind)));
}

// The rows of a run's kernel profile (store/kernel_metrics.h), when it has one: each GEMM shape's
// time per call, and each timed class's total over the profiled steps against its feature summed
// over every stage's microbatches, and each kind of module pass's time per call.
void AddKernelRows(const RunData& run, const TrainPlan& plan, LeastSquaresProblem& problem,
                   std::vector<FitResidual>& labels) {
  int steps = 0;
  const std::vector<KernelSample> samples = KernelSamplesOf(run, steps);
  if (steps < 1) return;
  std::array<double, kOpFeatures> per_step{};  // every stage's microbatches, F + I + W
  std::vector<int> microbatches(plan.schedule.num_stages(), 0);
  for (const StageRange& route : plan.schedule.routes) {
    for (int s = route.first; s <= route.last; ++s) ++microbatches[s];
  }
  for (int s = 0; s < plan.schedule.num_stages(); ++s) {
    const Result<LayerWork> work = StageWork(plan, s);
    if (!work.ok()) return;
    for (int k = 0; k < kOpFeatures; ++k) {
      per_step[k] +=
          microbatches[s] * (work->f.features[k] + work->i.features[k] + work->w.features[k]);
    }
  }
  for (const KernelSample& sample : samples) {
    std::vector<double> row(kCostParameters, 0);
    double target = sample.seconds;
    std::string kind;
    int index = 0;
    if (sample.kind == KernelKind::kModule) {
      const Result<LayerWork> work = ModuleWork(plan, sample.m);
      if (!work.ok() || sample.n < 0 || sample.n > 2) continue;
      const OpCounts& pass = sample.n == 0 ? work->f : sample.n == 1 ? work->i : work->w;
      std::copy(pass.features.begin(), pass.features.end(), row.begin());
      target /= static_cast<double>(sample.calls);
      kind = fmt::format("{}.{}", ModuleKindName(sample.m), "FIW"[sample.n]);
    } else if (sample.kind == KernelKind::kGemm) {
      const double m = sample.m, n = sample.n, k = sample.k;
      row[kGemmFlops] = 2 * m * n * k;
      row[kGemmA] = m * k;
      row[kGemmB] = k * n;
      row[kGemmC] = m * n;
      row[kGemmCalls] = 1;
      target /= static_cast<double>(sample.calls);
      kind = fmt::format("GEMM {}x{}x{}", sample.m, sample.n, sample.k);
    } else {
      const int feature = sample.kind == KernelKind::kActivation ? kActivation
                          : sample.kind == KernelKind::kScores   ? kScores
                                                                 : kLogits;
      row[feature] = steps * per_step[feature];
      if (!(row[feature] > 0)) continue;
      kind = std::string(OpFeatureName(feature));
      index = steps;
    }
    if (!(target > 0)) continue;
    problem.rows.push_back(std::move(row));
    problem.targets.push_back(target);
    labels.push_back({run.run.id, kind, index, target, 0});
  }
}

// The rows one run gives, appended to `problem` (and their labels to `labels`).
Status AddRunRows(const RunData& run, CostFamily& family, LeastSquaresProblem& problem,
                  std::vector<FitResidual>& labels, std::vector<double>& gaps,
                  std::vector<double>& latencies) {
  const std::string option = fmt::format("run {}", run.run.id);
  PIPETTE_ASSIGN_OR_RETURN(const TrainOptions options, TrainOptionsOf(run, option));
  PIPETTE_ASSIGN_OR_RETURN(const RecordedWork work, RecordedWorkOf(run, option));
  Result<TrainPlan> plan = PlanTraining(options);
  if (!plan.ok()) {
    return Status::InvalidArgument(fmt::format("{}: its configuration cannot be planned again: {}",
                                               option, plan.status().message()));
  }
  const CostFamily mine = FamilyOf(*plan, run.run.engine, options.dtype);
  if (family.engine.empty()) family = mine;
  if (!(mine == family)) {
    return Status::InvalidArgument(fmt::format(
        "{}: engine {}, dtype {}, {}-style model, but the runs before it are engine {}, dtype {}, "
        "{}-style: one fit models one engine, dtype and architecture style",
        option, mine.engine, mine.dtype, mine.style, family.engine, family.dtype, family.style));
  }
  for (int s = 0; s < static_cast<int>(work.stages.size()); ++s) {
    PIPETTE_ASSIGN_OR_RETURN(const LayerWork stage, StageWork(*plan, s));
    for (const ActionKind kind : kComputeKinds) {
      const std::optional<double>& cost = work.stages[s].Of(kind);
      if (!cost || !(*cost > 0)) continue;
      problem.rows.push_back(FeaturesOf(stage, kind));
      problem.targets.push_back(*cost);
      labels.push_back({run.run.id, std::string(ActionKindName(kind)), s, *cost, 0});
    }
  }
  AddKernelRows(run, *plan, problem, labels);
  const std::vector<double> params = RankParams(*plan);
  for (int r = 0; r < static_cast<int>(work.optimizer.size()); ++r) {
    if (!(work.optimizer[r] > 0)) continue;
    problem.rows.push_back(OptimizerFeatures(params[r]));
    problem.targets.push_back(work.optimizer[r]);
    labels.push_back({run.run.id, "OPTIMIZER", r, work.optimizer[r], 0});
  }
  if (work.instruction_gap >= 0) gaps.push_back(work.instruction_gap);
  if (work.message_latency >= 0) latencies.push_back(work.message_latency);
  return Status::Ok();
}

}  // namespace

std::string_view CostParameterName(int parameter) {
  if (parameter < kOpFeatures) return OpFeatureName(parameter);
  return parameter == kInstructions ? "instructions" : "optimizer_params";
}

std::string_view CostParameterUnit(int parameter) { return kUnits[parameter]; }

std::string_view FitStatusName(FitStatus status) {
  switch (status) {
    case FitStatus::kFitted:
      return "fitted";
    case FitStatus::kUnconstrained:
      return "unconstrained";
    default:
      return "confounded";
  }
}

Result<TrainOptions> TrainOptionsOf(const RunData& run, const std::string& option) {
  if (run.run.engine != "cpu" && run.run.engine != "cuda") {
    return Status::InvalidArgument(
        fmt::format("{}: engine {}: only a real engine's training run (cpu, cuda) is measured work",
                    option, Printable(run.run.engine)));
  }
  const nlohmann::ordered_json json = ReadRunConfig(run.run.config).json;
  TrainingConfig c;
  from_json(json, c);
  if (c.model.empty() || c.schedule.empty()) {
    return Status::InvalidArgument(fmt::format(
        "{}: its configuration names no model or schedule (not a pipette train run)", option));
  }
  if (c.rank_speed || c.microbatch_seqlens) {
    return Status::InvalidArgument(fmt::format(
        "{}: it ran uneven work (--rank-speed or --microbatch-seqlens); fit from even runs",
        option));
  }
  TrainOptions o;
  o.model = c.model;
  o.schedule = c.schedule;
  o.p = c.p;
  o.v = c.v;
  o.m = c.m;
  o.dp = c.dp;
  o.steps = std::max(1, c.steps);
  o.trace_steps = c.trace_steps;
  o.micro_batch_size = c.micro_batch_size;
  o.seq_len = c.seq_len;
  o.dtype = c.dtype.empty() ? "fp32" : c.dtype;
  return o;
}

CostFamily FamilyOf(const TrainPlan& plan, const std::string& engine, const std::string& dtype) {
  return {engine, dtype, plan.spec.learned_positions ? "gpt" : "llama"};
}

Result<LayerWork> StageWork(const TrainPlan& plan, int stage) {
  LayerWork sum;
  const MicrobatchShape mb{plan.micro_batch_size, plan.seq_len};
  for (const std::string& layer : plan.piece_layers[plan.stage_piece[stage]]) {
    PIPETTE_ASSIGN_OR_RETURN(const LayerWork work, LayerOps(plan.spec, layer, mb));
    sum.f += work.f;
    sum.i += work.i;
    sum.w += work.w;
  }
  return sum;
}

std::vector<double> RankParams(const TrainPlan& plan) {
  std::vector<double> params(plan.p(), 0);
  const Placement& placement = plan.schedule.placement;
  for (int s = 0; s < plan.schedule.num_stages(); ++s) {
    params[placement.rank_of(s)] += static_cast<double>(plan.piece_params[plan.stage_piece[s]]);
  }
  return params;
}

Result<CostFit> FitCosts(const std::vector<RunData>& runs) {
  if (runs.empty()) return Status::InvalidArgument("give at least one run");
  CostFit fit;
  LeastSquaresProblem problem;
  std::vector<double> gaps, latencies;
  for (const RunData& run : runs) {
    PIPETTE_RETURN_IF_ERROR(AddRunRows(run, fit.family, problem, fit.residuals, gaps, latencies));
    fit.runs.push_back(run.run.id);
  }
  for (const double target : problem.targets) problem.weights.push_back(1 / target);
  const LeastSquaresSolution solution = SolveNonNegativeLeastSquares(problem);
  fit.values = solution.values;
  fit.status = solution.status;
  fit.independence = solution.independence;
  fit.with = solution.with;
  for (std::size_t i = 0; i < fit.residuals.size(); ++i) {
    fit.residuals[i].fitted = Predicted(problem.rows[i], fit.values);
  }
  fit.instruction_gap = gaps.empty() ? -1 : Median(gaps);
  fit.message_latency = latencies.empty() ? -1 : Median(latencies);
  return fit;
}

Result<FittedWork> PriceWithFit(const CostFit& fit, const TrainPlan& plan,
                                const CostFamily& family) {
  const std::string option = fmt::format("--fit = {}", fit.id);
  if (!(family == fit.family)) {
    return Status::InvalidArgument(fmt::format(
        "{}: the fit models engine {}, dtype {}, {}-style decoders; this configuration is engine "
        "{}, dtype {}, a {}-style decoder: outside the fitted family",
        option, fit.family.engine, fit.family.dtype, fit.family.style, family.engine, family.dtype,
        family.style));
  }
  FittedWork out;
  auto check = [&](const std::vector<double>& row, std::string_view what) -> Status {
    for (int k = 0; k < kCostParameters; ++k) {
      if (row[k] > 0 && fit.status[k] == FitStatus::kUnconstrained) {
        return Status::InvalidArgument(fmt::format(
            "{}: {} needs {} ({}), which none of the fitted runs determined (unconstrained); fit "
            "from a run that exercises it",
            option, what, CostParameterName(k), CostParameterUnit(k)));
      }
    }
    return Status::Ok();
  };
  for (int s = 0; s < plan.schedule.num_stages(); ++s) {
    PIPETTE_ASSIGN_OR_RETURN(const LayerWork stage, StageWork(plan, s));
    MeasuredStageCost cost;
    for (const ActionKind kind : kComputeKinds) {
      const std::vector<double> row = FeaturesOf(stage, kind);
      PIPETTE_RETURN_IF_ERROR(check(row, fmt::format("stage {}'s {}", s, ActionKindName(kind))));
      cost.Of(kind) = Predicted(row, fit.values);
    }
    out.stages.push_back(cost);
  }
  for (const double params : RankParams(plan)) {
    const std::vector<double> row = OptimizerFeatures(params);
    PIPETTE_RETURN_IF_ERROR(check(row, "the parameter update"));
    out.optimizer.push_back(Predicted(row, fit.values));
  }
  return out;
}

StoredFit StoredFitOf(const CostFit& fit) {
  nlohmann::ordered_json doc;
  doc["family"] = {
      {"engine", fit.family.engine}, {"dtype", fit.family.dtype}, {"style", fit.family.style}};
  nlohmann::ordered_json params = nlohmann::ordered_json::array();
  for (int k = 0; k < kCostParameters; ++k) {
    nlohmann::ordered_json with = nlohmann::ordered_json::array();
    for (const int j : fit.with[k]) with.push_back(CostParameterName(j));
    params.push_back({{"name", CostParameterName(k)},
                      {"value", fit.values[k]},
                      {"unit", CostParameterUnit(k)},
                      {"status", FitStatusName(fit.status[k])},
                      {"independence", fit.independence[k]},
                      {"with", with}});
  }
  doc["parameters"] = params;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const FitResidual& r : fit.residuals) {
    rows.push_back({{"run", r.run},
                    {"kind", r.kind},
                    {"index", r.index},
                    {"measured_s", r.measured},
                    {"fitted_s", r.fitted}});
  }
  doc["rows"] = rows;
  doc["instruction_gap_s"] = fit.instruction_gap;
  doc["message_latency_s"] = fit.message_latency;
  StoredFit stored;
  stored.id = fit.id;
  stored.created_at = fit.created_at;
  stored.engine = fit.family.engine;
  stored.runs = fit.runs;
  stored.document = doc.dump();
  return stored;
}

Result<CostFit> FitOf(const StoredFit& stored) {
  CostFit fit;
  fit.id = stored.id;
  fit.created_at = stored.created_at;
  fit.runs = stored.runs;
  const Status unreadable = Status::InvalidArgument(
      fmt::format("fit {}: its document is not one this pipette reads (parameters {})", stored.id,
                  "gemm_flops .. optimizer_params"));
  try {
    const nlohmann::json doc = nlohmann::json::parse(stored.document);
    fit.family = {doc.at("family").at("engine").get<std::string>(),
                  doc.at("family").at("dtype").get<std::string>(),
                  doc.at("family").at("style").get<std::string>()};
    const nlohmann::json& params = doc.at("parameters");
    if (!params.is_array() || params.size() != kCostParameters) return unreadable;
    for (int k = 0; k < kCostParameters; ++k) {
      const nlohmann::json& p = params[k];
      if (p.at("name").get<std::string>() != CostParameterName(k)) return unreadable;
      fit.values.push_back(p.at("value").get<double>());
      const std::string status = p.at("status").get<std::string>();
      fit.status.push_back(status == "fitted"          ? FitStatus::kFitted
                           : status == "unconstrained" ? FitStatus::kUnconstrained
                                                       : FitStatus::kConfounded);
      fit.independence.push_back(p.at("independence").get<double>());
      std::vector<int> with;
      for (const auto& name : p.at("with")) {
        for (int j = 0; j < kCostParameters; ++j) {
          if (name.get<std::string>() == CostParameterName(j)) with.push_back(j);
        }
      }
      fit.with.push_back(with);
    }
    for (const auto& r : doc.at("rows")) {
      fit.residuals.push_back({r.at("run").get<std::int64_t>(), r.at("kind").get<std::string>(),
                               r.at("index").get<int>(), r.at("measured_s").get<double>(),
                               r.at("fitted_s").get<double>()});
    }
    fit.instruction_gap = doc.at("instruction_gap_s").get<double>();
    fit.message_latency = doc.at("message_latency_s").get<double>();
  } catch (const nlohmann::json::exception&) {
    return unreadable;
  }
  return fit;
}

Result<std::int64_t> ParseFitName(const std::string& which, const std::string& option) {
  if (which == "latest") return 0;
  std::int64_t id = 0;
  const auto [end, error] = std::from_chars(which.data(), which.data() + which.size(), id);
  if (error != std::errc() || end != which.data() + which.size() || id < 1) {
    return Status::InvalidArgument(fmt::format(
        "{} = {}: must be a fit id (pipette fits) or 'latest'", option, Printable(which)));
  }
  return id;
}

Result<CostFit> FindFit(ExperimentDb& db, const std::string& which, const std::string& option) {
  PIPETTE_ASSIGN_OR_RETURN(std::int64_t id, ParseFitName(which, option));
  const std::string named = fmt::format("{} = {}", option, Printable(which));
  if (id == 0) {
    PIPETTE_ASSIGN_OR_RETURN(const std::vector<StoredFit> all, db.ListFits());
    if (all.empty()) {
      return Status::InvalidArgument(
          fmt::format("{}: the database has no fits; run pipette fit RUN first", named));
    }
    id = all.back().id;
  }
  Result<StoredFit> stored = db.LoadFit(id);
  if (!stored.ok() && stored.status().code() == StatusCode::kNotFound) {
    return Status::InvalidArgument(fmt::format("{}: {}", named, stored.status().message()));
  }
  if (!stored.ok()) return stored.status();
  return FitOf(*stored);
}

}  // namespace pipette
