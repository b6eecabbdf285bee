// ScheduleGenerator: the one interface every built-in schedule fills (one file per schedule in
// schedules/, listed in registry.cc), in the spirit of nccl-tests' one-file-per-collective table.
//
// A generator states its constraints, checks a request against them, and builds the compute-only
// per-rank orders of its published reference implementation. Generators are stateless singletons:
// const, thread-safe, never destroyed.
#pragma once

#include <string_view>

#include "pipette/common/status.h"
#include "pipette/schedule/schedule.h"

namespace pipette {

class ScheduleGenerator {
 public:
  virtual ~ScheduleGenerator() = default;

  // CLI name, e.g. "interleaved-1f1b".
  virtual std::string_view name() const = 0;
  // One line for `pipette schedule --list`: what it is and whose order it follows.
  virtual std::string_view summary() const = 0;
  // One line stating the constraints on p, v and m, e.g. "v = 2; m >= 2p; p even".
  virtual std::string_view constraints() const = 0;
  // The v used when the user gives none.
  virtual int default_v() const { return 1; }
  // Whether --group-size means anything to this schedule.
  virtual bool uses_group_size() const { return false; }

  // Returns OK when `params` (p, m >= 1 and v resolved) meet the constraints; otherwise an
  // InvalidArgument error naming the value and the rule.
  virtual Status Check(const ScheduleParams& params) const = 0;

  // Builds the schedule. REQUIRES: Check(params).ok().
  virtual Schedule Generate(const ScheduleParams& params) const = 0;
};

}  // namespace pipette
