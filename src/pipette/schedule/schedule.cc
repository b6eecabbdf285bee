#include "pipette/schedule/schedule.h"

namespace pipette {

std::size_t Schedule::num_actions() const {
  std::size_t n = 0;
  for (const auto& actions : ranks) n += actions.size();
  return n;
}

Schedule MakeEmptySchedule(std::string name, int p, int v, int m, Placement placement) {
  Schedule schedule;
  schedule.name = std::move(name);
  schedule.p = p;
  schedule.v = v;
  schedule.m = m;
  schedule.routes.assign(m, StageRange{0, placement.num_stages() - 1});
  schedule.placement = std::move(placement);
  schedule.ranks.resize(p);
  return schedule;
}

}  // namespace pipette
