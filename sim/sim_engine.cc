#include "sim/sim_engine.h"

#include <xbt/log.h>

#include <simgrid/s4u.hpp>

namespace pipette {

std::unique_ptr<simgrid::s4u::Engine> MakeEngine() {
  int argc = 1;
  char name[] = "pipette";
  char* argv[] = {name, nullptr};
  auto engine = std::make_unique<simgrid::s4u::Engine>(&argc, argv);
  xbt_log_control_set("root.thresh:critical");
  simgrid::s4u::Engine::set_config("network/model:CM02");
  simgrid::s4u::Engine::set_config("network/crosstraffic:0");
  simgrid::s4u::Engine::set_config("network/TCP-gamma:0");
  simgrid::s4u::Engine::set_config("contexts/guard-size:0");
  return engine;
}

}  // namespace pipette
