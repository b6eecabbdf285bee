// CostFit: a cost model of a real engine fitted to its measured runs (`pipette fit`), which prices
// configurations never run (`pipette simulate --fit`). Each compute instruction's time is a sum of
// parameters times what the instruction does, counted by the op inventory (engine/op_inventory.h)
// over the layers of its stage:
//   t(F|I|W|B of stage s) = sum_k theta_k * feature_k(s, pass) + theta_instructions
// with one feature per class of operation (GEMM FLOPs, GEMM operand elements, GEMM calls,
// elementwise, activation, attention-score and logit elements, module calls; with a calibration's
// GEMM table, the table's time of the GEMMs in place of their FLOPs and operands) and a rank's
// parameter update t(OPTIMIZER of rank r) = theta_optimizer * its parameters. The rows are the
// runs' per-stage medians (fidelity/recorded_work.h: F, I, W, B without step 0), per-rank update
// medians and, where a run recorded its kernel profile (engine/kernel_profile.h), each GEMM shape's
// time per call and the activation, score and logit kernels' totals, weighted by 1/measured
// (relative error); the solver (least_squares.h) fits what the
// rows determine and reports each other parameter as unconstrained (no row depends on it) or
// confounded (the rows see it only together with others; held at 0, its part carried by those).
//
// A fit holds for one family: the engine, the GEMM dtype and the architecture style (GPT: learned
// positions, LayerNorm, biases, GELU; Llama: RoPE, RMSNorm, SwiGLU) of its runs, all dense
// decoders. Pure functions over recorded runs; model files named by the runs must still be
// readable (their graphs are rebuilt).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/engine/calibration.h"
#include "pipette/engine/gemm_table.h"
#include "pipette/engine/measured_costs.h"
#include "pipette/engine/op_inventory.h"
#include "pipette/engine/train_plan.h"
#include "pipette/fidelity/least_squares.h"
#include "pipette/store/experiment_db.h"
#include "pipette/store/run_data.h"

namespace pipette {

// The parameters: the op features (OpFeature, 0..kOpFeatures-1), then these.
enum CostParameter : int {
  kInstructions = kOpFeatures,  // seconds per compute instruction (the engine's own work)
  kOptimizerParams,             // seconds per parameter in a rank's update (AdamW)
  kGemmTable,  // times the calibration's GEMM table (engine/gemm_table.h): every GEMM's seconds
  kCostParameters
};

std::string_view CostParameterName(int parameter);  // "gemm_flops", ..., "optimizer_params"
std::string_view CostParameterUnit(int parameter);  // "s/FLOP", "s/element", "s/call", ...

// The GEMM parameters a GEMM table replaces: gemm_flops, gemm_a, gemm_b, gemm_c.
inline constexpr int kTableReplaces[] = {kGemmFlops, kGemmA, kGemmB, kGemmC};

struct CostFamily {
  std::string engine;  // "cpu", "cuda"
  std::string dtype;   // "fp32", "bf16"
  std::string style;   // "gpt" or "llama"
  friend bool operator==(const CostFamily&, const CostFamily&) = default;
};

// One fitted row: a stage's F, I, W or B median, a rank's OPTIMIZER median, or a kernel of the
// run's profile (engine/kernel_profile.h): a GEMM shape's time per call, or the total of the
// activation, score or logit kernels over the profiled steps.
struct FitResidual {
  std::int64_t run = 0;
  std::string kind;  // "F", "I", "W", "B", "OPTIMIZER", "GEMM MxNxK", "activation", ...
  int index = 0;     // the stage (compute kinds), the rank (OPTIMIZER), the profiled steps
  double measured = 0, fitted = 0;  // seconds
};

struct CostFit {
  std::int64_t id = 0;     // set by the database
  std::string created_at;  // ISO 8601 UTC, set by the database
  std::vector<std::int64_t> runs;
  CostFamily family;
  std::vector<double> values;  // per CostParameter, in its unit
  std::vector<FitStatus> status;
  std::vector<double> independence;    // least_squares.h
  std::vector<std::vector<int>> with;  // per confounded parameter
  std::vector<FitResidual> residuals;
  // Beyond compute, the medians over the runs (recorded_work.h); -1 where no run measured one.
  double instruction_gap = -1;  // seconds between instructions that wait for nothing
  double message_latency = -1;  // seconds of a message whose receiver was waiting
  // With a calibration's GEMM table (pipette fit --calibration): every GEMM priced as
  // gemm_table x its table time (plus gemm_calls), gemm_flops .. gemm_c unused; without one
  // (calibration 0, the table empty), gemm_table is unused.
  std::int64_t calibration = 0;
  GemmTable gemm_table;
  // The machine's speed from step to step in the fitted runs (RecordedWork::step_slowdown, each
  // run's traced steps after step 0 in turn; per rank of that run): a prediction's simulated steps
  // take them in turn (StepSlowdownsFor), so that its step time pays what the fitted runs paid
  // for one rank running slower than another in a step. Empty: a steady machine (a fit stored
  // before they were recorded).
  std::vector<std::vector<double>> step_slowdown;
};

// The fit's step slowdowns for `p` ranks: rank r takes the fitted run's rank r mod its ranks.
std::vector<std::vector<double>> StepSlowdownsFor(const CostFit& fit, int p);

// How far the machine's speed moved while the fitted runs were measured: the largest
// |slowdown / median - 1| over every rank's step of CostFit::step_slowdown (0 without any). A fit
// takes the steps in turn for every prediction, so a drift beyond kSteadyDrift (a quiet machine
// stays within a few percent) moves every prediction with it: `pipette fit` warns.
double StepDrift(const CostFit& fit);
inline constexpr double kSteadyDrift = 0.10;

std::string_view FitStatusName(FitStatus status);  // "fitted", "unconstrained", "confounded"

// The training options a recorded run was made with (its configuration), for PlanTraining.
// InvalidArgument naming `option` when the configuration is not a training run's.
Result<TrainOptions> TrainOptionsOf(const RunData& run, const std::string& option);

// The family of a plan trained on `engine` with `dtype`.
CostFamily FamilyOf(const TrainPlan& plan, const std::string& engine, const std::string& dtype);

// What stage `stage` of `plan` does in one microbatch at full length, per pass.
Result<LayerWork> StageWork(const TrainPlan& plan, int stage);

// Parameters held by each pipeline rank (every stage it runs; a piece run twice counts twice).
std::vector<double> RankParams(const TrainPlan& plan);

// Fits `runs` (InvalidArgument naming "pipette fit", the run and the rule for a run that is not a
// finished real-engine training run with a traced program, for runs of different families, or for
// uneven work). With `calibration`, its GEMM table prices the GEMMs (InvalidArgument naming
// --calibration when it has none, or when it measured another host than a run's).
Result<CostFit> FitCosts(const std::vector<RunData>& runs,
                         const Calibration* calibration = nullptr);

// The fitted costs of `plan`: F, I, W and B of every stage, and each rank's update. Refuses
// (InvalidArgument naming --fit and the reason) a plan outside the fit's family, and one that needs
// a parameter no fitted run determined (unconstrained).
struct FittedWork {
  std::vector<MeasuredStageCost> stages;
  std::vector<double> optimizer;  // per rank
};
Result<FittedWork> PriceWithFit(const CostFit& fit, const TrainPlan& plan,
                                const CostFamily& family);

// The fit as the database stores it (ExperimentDb::RecordFit), and back. FitOf returns
// InvalidArgument naming the fit for a document this pipette cannot read.
StoredFit StoredFitOf(const CostFit& fit);
Result<CostFit> FitOf(const StoredFit& stored);

// The id `which` names: a positive integer, or 0 for "latest"; InvalidArgument naming `option`,
// the value and the rule otherwise. Checked before any database is opened.
Result<std::int64_t> ParseFitName(const std::string& which, const std::string& option);

// The fit `which` names in `db`: an id, or "latest" (the newest). InvalidArgument naming `option`,
// the value and the rule for a malformed or unknown id or an empty table; the database's own errors
// otherwise.
Result<CostFit> FindFit(ExperimentDb& db, const std::string& which, const std::string& option);

}  // namespace pipette
