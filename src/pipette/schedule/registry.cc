#include "pipette/schedule/registry.h"

#include <fmt/core.h>

#include <array>
#include <cstdint>

#include "pipette/common/printable.h"
#include "pipette/schedule/lower.h"
#include "pipette/schedule/schedule_csv.h"
#include "pipette/schedule/schedules/generators.h"
#include "pipette/schedule/validate.h"

namespace pipette {
namespace {

Status CheckAgreesWithFile(const char* key, int given, int in_file, const Schedule& schedule) {
  if (given == 0 || given == in_file) return Status::Ok();
  return Status::InvalidArgument(fmt::format("{} = {} disagrees with {}, which has {} = {}", key,
                                             given, Printable(schedule.name), key + 1, in_file));
}

Result<Schedule> MakeCsvSchedule(std::string_view path, const ScheduleParams& params) {
  if (params.group_size != 0) {
    return Status::InvalidArgument(fmt::format(
        "--group-size = {}: does not apply to a schedule loaded from CSV", params.group_size));
  }
  PIPETTE_ASSIGN_OR_RETURN(Schedule schedule, LoadComputeCsv(std::string(path)));
  // The limits of the built-in schedules hold for a file's too (16,385 and 40,000 ranks were
  // accepted from CSV).
  if (schedule.p > kMaxPipelineRanks) {
    return Status::InvalidArgument(
        fmt::format("{}: {} ranks (lines): more than the limit of {} pipeline ranks",
                    Printable(schedule.name), schedule.p, kMaxPipelineRanks));
  }
  if (const std::int64_t chunks = std::int64_t{schedule.num_stages()} * schedule.m;
      chunks > kMaxScheduleChunks) {
    return Status::InvalidArgument(fmt::format(
        "{}: {} stages x {} microbatches: more than the "
        "limit of {} chunks",
        Printable(schedule.name), schedule.num_stages(), schedule.m, kMaxScheduleChunks));
  }
  PIPETTE_RETURN_IF_ERROR(CheckAgreesWithFile("-p", params.p, schedule.p, schedule));
  PIPETTE_RETURN_IF_ERROR(CheckAgreesWithFile("-v", params.v, schedule.v, schedule));
  PIPETTE_RETURN_IF_ERROR(CheckAgreesWithFile("-m", params.m, schedule.m, schedule));
  // Validate() counts a rank's actions from 0 and skips empty cells; say so for file users.
  PIPETTE_RETURN_IF_ERROR(Validate(schedule).WithContext(
      Printable(schedule.name) + " (rank r is line r+1; action k is its (k+1)-th non-empty cell)"));
  return schedule;
}

}  // namespace

std::span<const ScheduleGenerator* const> AllScheduleGenerators() {
  static const std::array<const ScheduleGenerator*, 15> kAll = {
      &schedules::Gpipe(),
      &schedules::OneFOneB(),
      &schedules::EagerOneFOneB(),
      &schedules::ZbH1(),
      &schedules::ZbH2(),
      &schedules::InterleavedOneFOneB(),
      &schedules::InterleavedOneFOneBPlusOne(),
      &schedules::KimiK2(),
      &schedules::InterleavedGpipe(),
      &schedules::InterleavedZeroBubble(),
      &schedules::Zbv(),
      &schedules::DualPipe(),
      &schedules::DualPipeV(),
      &schedules::VHalf(),
      &schedules::VMin(),
  };
  return kAll;
}

const ScheduleGenerator* FindScheduleGenerator(std::string_view name) {
  for (const ScheduleGenerator* generator : AllScheduleGenerators()) {
    if (generator->name() == name) return generator;
  }
  return nullptr;
}

Result<Schedule> MakeSchedule(std::string_view name, const ScheduleParams& requested) {
  if (name.substr(0, 4) == "csv:") return MakeCsvSchedule(name.substr(4), requested);

  const ScheduleGenerator* generator = FindScheduleGenerator(name);
  if (generator == nullptr) {
    return Status::NotFound(fmt::format(
        "unknown schedule '{}': `pipette schedule --list` shows the built-in ones; use csv:FILE "
        "for your own",
        Printable(name)));
  }
  const std::string context = fmt::format("schedule '{}'", name);
  ScheduleParams params = requested;
  if (params.v == 0) params.v = generator->default_v();
  if (params.p < 1) {
    return Status::InvalidArgument(fmt::format("-p = {}: need at least 1 pipeline rank", params.p));
  }
  if (params.m < 1) {
    return Status::InvalidArgument(fmt::format("-m = {}: need at least 1 microbatch", params.m));
  }
  if (params.v < 1) {
    return Status::InvalidArgument(
        fmt::format("-v = {}: need at least 1 stage per rank", params.v));
  }
  if (params.group_size < 0) {
    return Status::InvalidArgument(fmt::format(
        "--group-size = {}: must be >= 1 (or 0 for the schedule's default)", params.group_size));
  }
  if (params.group_size != 0 && !generator->uses_group_size()) {
    return Status::InvalidArgument(fmt::format(
        "--group-size = {}: {} has no microbatch groups (only Megatron's interleaved schedules do)",
        params.group_size, context));
  }
  if (params.p > kMaxPipelineRanks) {
    return Status::InvalidArgument(fmt::format("-p = {}: more than the limit of {} pipeline ranks",
                                               params.p, kMaxPipelineRanks));
  }
  // p, v, m < 2^31, so p*v fits in 64 bits, and once p*v <= the limit so does p*v*m.
  const std::int64_t stages = std::int64_t{params.p} * params.v;
  const std::int64_t chunks = stages > kMaxScheduleChunks ? stages : stages * params.m;
  if (chunks > kMaxScheduleChunks) {
    return Status::InvalidArgument(fmt::format("p*v*m = {}*{}*{}: more than the limit of {} chunks",
                                               params.p, params.v, params.m, kMaxScheduleChunks));
  }
  PIPETTE_RETURN_IF_ERROR(generator->Check(params).WithContext(context));
  // Not validated here: generators are valid by construction (schedule_grid_test checks every one
  // over a grid), and Lower(), which every execution goes through, validates whatever it lowers.
  return generator->Generate(params);
}

Result<Evaluation> EvaluateNamedSchedule(std::string_view name, const ScheduleParams& params,
                                         StageCost cost, const EvaluateOptions& options) {
  PIPETTE_ASSIGN_OR_RETURN(Schedule schedule, MakeSchedule(name, params));
  PIPETTE_ASSIGN_OR_RETURN(Program program, Lower(schedule));
  return Evaluate(program, Costs::Uniform(schedule.num_stages(), cost), options);
}

}  // namespace pipette
