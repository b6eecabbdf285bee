#include "pipette/fidelity/cost_fit.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>

#include "pipette/common/printable.h"
#include "pipette/engine/decoder_layers.h"
#include "pipette/fidelity/recorded_work.h"
#include "pipette/store/kernel_metrics.h"
#include "pipette/store/run_config.h"

namespace pipette {

namespace {

constexpr std::string_view kUnits[kCostParameters] = {
    "s/FLOP",    "s/element", "s/element", "s/element",     "s/call",      "s/element", "s/element",
    "s/element", "s/element", "s/module",  "s/instruction", "s/parameter", "x table"};

constexpr ActionKind kComputeKinds[] = {ActionKind::kForward, ActionKind::kInputBackward,
                                        ActionKind::kWeightBackward, ActionKind::kFullBackward};

// The row of `ops`, one pass's work: its op features, with a GEMM table the table's time of its
// GEMMs (called as `pass` calls them) in place of their FLOPs and operand elements.
std::vector<double> RowOf(const OpCounts& ops, const GemmTable& table, GemmPass pass) {
  std::vector<double> row(ops.features.begin(), ops.features.end());
  row.resize(kCostParameters, 0);
  if (table.empty()) return row;
  for (const int k : kTableReplaces) row[k] = 0;
  for (const GemmShape& g : ops.gemms) row[kGemmTable] += table.SecondsOf(g, pass);
  return row;
}

void AddTo(std::vector<double>& row, const std::vector<double>& more) {
  for (std::size_t k = 0; k < row.size(); ++k) row[k] += more[k];
}

// The features of one compute kind of a stage: its passes' op counts and one instruction.
std::vector<double> FeaturesOf(const LayerWork& work, ActionKind kind, const GemmTable& table) {
  std::vector<double> row(kCostParameters, 0);
  if (kind == ActionKind::kForward) AddTo(row, RowOf(work.f, table, GemmPass::kForward));
  if (kind == ActionKind::kInputBackward || kind == ActionKind::kFullBackward) {
    AddTo(row, RowOf(work.i, table, GemmPass::kInputGrad));
  }
  if (kind == ActionKind::kWeightBackward || kind == ActionKind::kFullBackward) {
    AddTo(row, RowOf(work.w, table, GemmPass::kWeightGrad));
  }
  row[kInstructions] = 1;
  return row;
}

// How often the plan's stages call each GEMM shape in each pass (per microbatch).
using PassMix =
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, std::array<double, kGemmPasses>>;

// What a plan's step does, for its kernel profile's rows: every op feature summed over every
// stage's microbatches (F + I + W), and the pass mix of its GEMM shapes.
struct PlanWork {
  std::array<double, kOpFeatures> per_step{};
  PassMix mix;
};

std::optional<PlanWork> PlanWorkOf(const TrainPlan& plan) {
  std::vector<int> microbatches(plan.schedule.num_stages(), 0);
  for (const StageRange& route : plan.schedule.routes) {
    for (int s = route.first; s <= route.last; ++s) ++microbatches[s];
  }
  PlanWork out;
  for (int s = 0; s < plan.schedule.num_stages(); ++s) {
    const Result<LayerWork> work = StageWork(plan, s);
    if (!work.ok()) return std::nullopt;
    for (int k = 0; k < kOpFeatures; ++k) {
      out.per_step[k] +=
          microbatches[s] * (work->f.features[k] + work->i.features[k] + work->w.features[k]);
    }
    int pass = 0;
    for (const OpCounts* ops : {&work->f, &work->i, &work->w}) {
      for (const GemmShape& g : ops->gemms) out.mix[{g.m, g.n, g.k}][pass] += 1;
      ++pass;
    }
  }
  return out;
}

// The row of one profiled GEMM call of `shape`; with a table, its time the passes' times weighted
// by how often the plan calls the shape in each (the profile merges the passes; a shape the plan
// does not call: the forward's).
std::vector<double> ProfiledGemmRow(const GemmShape& shape, const GemmTable& table,
                                    const PassMix& mix) {
  OpCounts call;
  const double m = static_cast<double>(shape.m), n = static_cast<double>(shape.n),
               k = static_cast<double>(shape.k);
  call.features[kGemmFlops] = 2 * m * n * k;
  call.features[kGemmA] = m * k;
  call.features[kGemmB] = k * n;
  call.features[kGemmC] = m * n;
  call.features[kGemmCalls] = 1;
  std::vector<double> row = RowOf(call, table, GemmPass::kForward);
  if (table.empty()) return row;
  const auto found = mix.find({shape.m, shape.n, shape.k});
  const std::array<double, kGemmPasses> per_pass =
      found == mix.end() ? std::array<double, kGemmPasses>{1, 0, 0} : found->second;
  double calls = 0, seconds = 0;
  for (int pass = 0; pass < kGemmPasses; ++pass) {
    calls += per_pass[pass];
    seconds += per_pass[pass] * table.SecondsOf(shape, static_cast<GemmPass>(pass));
  }
  row[kGemmTable] = seconds / calls;
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
void AddKernelRows(const RunData& run, const TrainPlan& plan, const GemmTable& table,
                   LeastSquaresProblem& problem, std::vector<FitResidual>& labels) {
  int steps = 0;
  const std::vector<KernelSample> samples = KernelSamplesOf(run, steps);
  if (steps < 1) return;
  const std::optional<PlanWork> step = PlanWorkOf(plan);
  if (!step) return;
  for (const KernelSample& sample : samples) {
    std::vector<double> row(kCostParameters, 0);
    double target = sample.seconds;
    std::string kind;
    int index = 0;
    if (sample.kind == KernelKind::kModule) {
      const Result<LayerWork> work = ModuleWork(plan, sample.m);
      if (!work.ok() || sample.n < 0 || sample.n > 2) continue;
      row = RowOf(sample.n == 0   ? work->f
                  : sample.n == 1 ? work->i
                                  : work->w,
                  table, static_cast<GemmPass>(sample.n));
      target /= static_cast<double>(sample.calls);
      kind = fmt::format("{}.{}", ModuleKindName(sample.m), "FIW"[sample.n]);
    } else if (sample.kind == KernelKind::kGemm) {
      row = ProfiledGemmRow({sample.m, sample.n, sample.k}, table, step->mix);
      target /= static_cast<double>(sample.calls);
      kind = fmt::format("GEMM {}x{}x{}", sample.m, sample.n, sample.k);
    } else {
      const int feature = sample.kind == KernelKind::kActivation ? kActivation
                          : sample.kind == KernelKind::kScores   ? kScores
                                                                 : kLogits;
      row[feature] = steps * step->per_step[feature];
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

// The GEMM table of `calibration`, which must have one and have measured the runs' host.
Result<GemmTable> TableOf(const Calibration& calibration, const std::vector<RunData>& runs) {
  const std::string option = fmt::format("--calibration = {}", calibration.id);
  if (calibration.gemms.empty()) {
    return Status::InvalidArgument(fmt::format(
        "{}: it has no GEMM table (measured with --gemm-max 0, or by a pipette before schema 8): "
        "run pipette calibrate again",
        option));
  }
  for (const RunData& run : runs) {
    if (run.run.host != calibration.host) {
      return Status::InvalidArgument(fmt::format(
          "{}: measured on host {}, but run {} ran on {}: a GEMM table describes one machine",
          option, Printable(calibration.host), run.run.id, Printable(run.run.host)));
    }
  }
  Result<GemmTable> table = GemmTable::Of(calibration.gemms);
  if (!table.ok()) {
    return Status::InvalidArgument(fmt::format("{}: {}", option, table.status().message()));
  }
  return table;
}

// Solves `problem` into `fit` with the GEMM table's scale first in the solver's order (the
// best-determined parameter first decides a confounded pair; least_squares.h), and marks the
// parameters the fit's model leaves out unused.
void SolveInOrder(const LeastSquaresProblem& problem, CostFit& fit) {
  std::vector<int> order = {kGemmTable};  // solver column j is parameter order[j]
  for (int k = 0; k < kGemmTable; ++k) order.push_back(k);
  LeastSquaresProblem ordered = problem;
  for (std::vector<double>& row : ordered.rows) {
    std::vector<double> permuted;
    for (const int k : order) permuted.push_back(row[k]);
    row = std::move(permuted);
  }
  const LeastSquaresSolution solution = SolveNonNegativeLeastSquares(ordered);
  fit.values.assign(kCostParameters, 0);
  fit.status.assign(kCostParameters, FitStatus::kUnconstrained);
  fit.independence.assign(kCostParameters, 0);
  fit.with.assign(kCostParameters, {});
  for (int j = 0; j < kCostParameters; ++j) {
    fit.values[order[j]] = solution.values[j];
    fit.status[order[j]] = solution.status[j];
    fit.independence[order[j]] = solution.independence[j];
    for (const int w : solution.with[j]) fit.with[order[j]].push_back(order[w]);
  }
  if (fit.gemm_table.empty()) {
    fit.status[kGemmTable] = FitStatus::kUnused;
  } else {
    for (const int k : kTableReplaces) fit.status[k] = FitStatus::kUnused;
  }
}

// The rows one run gives, appended to `problem` (and their labels to fit.residuals, GEMMs priced by
// fit.gemm_table), its family checked against fit.family (set by the first run), its step
// slowdowns appended to fit.step_slowdown.
Status AddRunRows(const RunData& run, LeastSquaresProblem& problem, CostFit& fit,
                  std::vector<double>& gaps, std::vector<double>& latencies) {
  const GemmTable& table = fit.gemm_table;
  CostFamily& family = fit.family;
  std::vector<FitResidual>& labels = fit.residuals;
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
      problem.rows.push_back(FeaturesOf(stage, kind, table));
      problem.targets.push_back(*cost);
      labels.push_back({run.run.id, std::string(ActionKindName(kind)), s, *cost, 0});
    }
  }
  AddKernelRows(run, *plan, table, problem, labels);
  const std::vector<double> params = RankParams(*plan);
  for (int r = 0; r < static_cast<int>(work.optimizer.size()); ++r) {
    if (!(work.optimizer[r] > 0)) continue;
    problem.rows.push_back(OptimizerFeatures(params[r]));
    problem.targets.push_back(work.optimizer[r]);
    labels.push_back({run.run.id, "OPTIMIZER", r, work.optimizer[r], 0});
  }
  fit.step_slowdown.insert(fit.step_slowdown.end(), work.step_slowdown.begin(),
                           work.step_slowdown.end());
  if (work.instruction_gap >= 0) gaps.push_back(work.instruction_gap);
  if (work.message_latency >= 0) latencies.push_back(work.message_latency);
  return Status::Ok();
}

}  // namespace

std::string_view CostParameterName(int parameter) {
  if (parameter < kOpFeatures) return OpFeatureName(parameter);
  return parameter == kInstructions      ? "instructions"
         : parameter == kOptimizerParams ? "optimizer_params"
                                         : "gemm_table";
}

std::string_view CostParameterUnit(int parameter) { return kUnits[parameter]; }

std::string_view FitStatusName(FitStatus status) {
  switch (status) {
    case FitStatus::kFitted:
      return "fitted";
    case FitStatus::kUnconstrained:
      return "unconstrained";
    case FitStatus::kUnused:
      return "unused";
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

Result<CostFit> FitCosts(const std::vector<RunData>& runs, const Calibration* calibration) {
  if (runs.empty()) return Status::InvalidArgument("give at least one run");
  CostFit fit;
  if (calibration != nullptr) {
    PIPETTE_ASSIGN_OR_RETURN(fit.gemm_table, TableOf(*calibration, runs));
    fit.calibration = calibration->id;
  }
  LeastSquaresProblem problem;
  std::vector<double> gaps, latencies;
  for (const RunData& run : runs) {
    PIPETTE_RETURN_IF_ERROR(AddRunRows(run, problem, fit, gaps, latencies));
    fit.runs.push_back(run.run.id);
  }
  for (const double target : problem.targets) problem.weights.push_back(1 / target);
  SolveInOrder(problem, fit);
  for (std::size_t i = 0; i < fit.residuals.size(); ++i) {
    fit.residuals[i].fitted = Predicted(problem.rows[i], fit.values);
  }
  fit.instruction_gap = gaps.empty() ? -1 : Median(gaps);
  fit.message_latency = latencies.empty() ? -1 : Median(latencies);
  return fit;
}

std::vector<std::vector<double>> StepSlowdownsFor(const CostFit& fit, int p) {
  std::vector<std::vector<double>> out;
  for (const std::vector<double>& step : fit.step_slowdown) {
    if (step.empty()) continue;
    std::vector<double> row;
    for (int r = 0; r < p; ++r) row.push_back(step[static_cast<std::size_t>(r) % step.size()]);
    out.push_back(std::move(row));
  }
  return out;
}

double StepDrift(const CostFit& fit) {
  std::vector<double> all;
  for (const std::vector<double>& step : fit.step_slowdown) {
    all.insert(all.end(), step.begin(), step.end());
  }
  if (all.empty()) return 0;
  const double median = Median(all);
  double drift = 0;
  for (const double f : all) drift = std::max(drift, std::abs(f / median - 1));
  return drift;
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
      const std::vector<double> row = FeaturesOf(stage, kind, fit.gemm_table);
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
  if (!fit.gemm_table.empty()) {
    nlohmann::ordered_json timings = nlohmann::ordered_json::array();
    for (const GemmTiming& g : fit.gemm_table.timings()) {
      timings.push_back({GemmPassName(g.pass), g.m, g.n, g.k, g.ranks, g.seconds});
    }
    doc["gemm_table"] = {{"calibration", fit.calibration}, {"timings", timings}};
  }
  if (!fit.step_slowdown.empty()) doc["step_slowdown"] = fit.step_slowdown;
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
    // A fit recorded before gemm_table existed has every parameter but that one (unused).
    if (!params.is_array() ||
        (params.size() != kCostParameters && params.size() != kCostParameters - 1)) {
      return unreadable;
    }
    for (int k = 0; k < static_cast<int>(params.size()); ++k) {
      const nlohmann::json& p = params[k];
      if (p.at("name").get<std::string>() != CostParameterName(k)) return unreadable;
      fit.values.push_back(p.at("value").get<double>());
      const std::string status = p.at("status").get<std::string>();
      fit.status.push_back(status == "fitted"          ? FitStatus::kFitted
                           : status == "unconstrained" ? FitStatus::kUnconstrained
                           : status == "unused"        ? FitStatus::kUnused
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
    if (params.size() == kCostParameters - 1) {
      fit.values.push_back(0);
      fit.status.push_back(FitStatus::kUnused);
      fit.independence.push_back(0);
      fit.with.emplace_back();
    }
    if (doc.contains("step_slowdown")) {
      fit.step_slowdown = doc.at("step_slowdown").get<std::vector<std::vector<double>>>();
      for (const std::vector<double>& step : fit.step_slowdown) {
        for (const double f : step) {
          if (!(f > 0 && f <= 100)) return unreadable;
        }
      }
    }
    if (doc.contains("gemm_table")) {
      const nlohmann::json& table = doc.at("gemm_table");
      fit.calibration = table.at("calibration").get<std::int64_t>();
      std::vector<GemmTiming> timings;
      for (const auto& t : table.at("timings")) {
        const std::optional<GemmPass> pass = GemmPassOf(t.at(0).get<std::string>());
        if (!pass) return unreadable;
        timings.push_back({t.at(1).get<std::int64_t>(), t.at(2).get<std::int64_t>(),
                           t.at(3).get<std::int64_t>(), t.at(4).get<int>(), t.at(5).get<double>(),
                           *pass});
      }
      Result<GemmTable> read = GemmTable::Of(std::move(timings));
      if (!read.ok()) return unreadable;
      fit.gemm_table = std::move(*read);
    }
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
