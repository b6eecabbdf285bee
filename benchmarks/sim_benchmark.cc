// Simulator throughput against a bare SimGrid program, in one run.
//
// Both run the same lowered program (1f1b and interleaved-1f1b at scale, ideal network): pipette's
// Simulate() (interpreter loop, runtime, trace) and a bare program whose actors only execute the
// compute actions and exchange the same messages with detached puts and blocking gets, without
// trace or bookkeeping (its receives block in program order, so its timing can differ slightly;
// the point is the cost per simulated event). SimGrid allows one engine per process, so every
// measurement runs in a forked child; the parent prints the median of 3 runs and the overhead
// ratio. Target: pipette <= 2x the bare program's wall time.
#include <fmt/core.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "pipette/schedule/lower.h"
#include "pipette/schedule/registry.h"
#include "sim/sim_engine.h"
#include "sim/simulator.h"

namespace {

using namespace pipette;
namespace sg4 = simgrid::s4u;

// Runs `work` in a child process and returns its wall seconds (reported through a pipe).
double InChild(const std::function<double()>& work) {
  std::fflush(stdout);  // the child must not print the parent's buffered output again
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const double seconds = work();
    if (write(fds[1], &seconds, sizeof seconds) != sizeof seconds) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  double seconds = -1;
  if (read(fds[0], &seconds, sizeof seconds) != sizeof seconds) seconds = -1;
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return seconds;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double RunPipette(const Program& program, const Costs& costs) {
  const auto start = std::chrono::steady_clock::now();
  SimulationCase one;
  one.program = &program;
  one.costs = costs;
  one.latency = 1e-6;
  Result<std::vector<SimulationResult>> results = Simulate({one});
  if (!results.ok()) return -1;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The same executions and messages with the idiom of a bare SimGrid pipeline program: a detached
// put per send, a blocking get per receive (rendezvous: the transfer starts once both are
// posted), execute per compute action; no interpreter, runtime or trace.
double RunBare(const Program& program, const Costs& costs) {
  const auto start = std::chrono::steady_clock::now();
  const auto engine = MakeEngine();
  auto* zone = sg4::create_star_zone("bare");
  std::vector<sg4::Host*> hosts;
  for (int r = 0; r < program.p; ++r) {
    auto* host = zone->create_host(fmt::format("r{}", r), 1.0)->seal();
    auto* link = zone->create_link(fmt::format("l{}", r), 1e30)
                     ->set_latency(0.5e-6)
                     ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
                     ->seal();
    zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, {sg4::LinkInRoute(link)},
                    true);
    hosts.push_back(host);
  }
  zone->seal();
  for (int r = 0; r < program.p; ++r) {
    sg4::Actor::create(fmt::format("r{}", r), hosts[r], [&, r] {
      for (const Instruction& ins : program.ranks[r].instructions) {
        const ActionKind k = ins.action.kind;
        static int payload = 0;
        if (k == ActionKind::kSendForward || k == ActionKind::kSendBackward) {
          sg4::Mailbox::by_name(fmt::format("{}->{}", r, ins.peer))
              ->put_init(&payload, 0)
              ->detach();
        } else if (k == ActionKind::kRecvForward || k == ActionKind::kRecvBackward) {
          sg4::Mailbox::by_name(fmt::format("{}->{}", ins.peer, r))->get<int>();
        } else {
          sg4::this_actor::execute(costs.Of(ins.action));
        }
      }
    });
  }
  engine->run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--bare-only") {  // for debugging the bare program
    const Schedule schedule = *MakeSchedule("1f1b", ScheduleParams{4, 1, 8, 0});
    const Program program = *Lower(schedule);
    std::printf("%g\n", RunBare(program, Costs::Uniform(4, StageCost{1e-3, 1e-3, 1e-3})));
    return 0;
  }
  struct Case {
    const char* schedule;
    int p, v, m;
  };
  std::printf(
      "# pipette simulator vs bare SimGrid (ideal network, median of 3 runs, wall seconds)\n");
  std::printf("# %-18s %5s %3s %6s %10s %12s %10s %10s %8s\n", "schedule", "p", "v", "m", "actions",
              "instructions", "pipette", "bare", "ratio");
  for (const Case& c : {Case{"1f1b", 64, 1, 512}, Case{"interleaved-1f1b", 32, 2, 256},
                        Case{"1f1b", 128, 1, 1024}}) {
    const Schedule schedule = *MakeSchedule(c.schedule, ScheduleParams{c.p, c.v, c.m, 0});
    const Program program = *Lower(schedule);
    const Costs costs = Costs::Uniform(schedule.num_stages(), StageCost{1e-3, 1e-3, 1e-3});
    std::vector<double> ours, bare;
    for (int k = 0; k < 3; ++k) {
      ours.push_back(InChild([&] { return RunPipette(program, costs); }));
      bare.push_back(InChild([&] { return RunBare(program, costs); }));
    }
    const double a = Median(ours), b = Median(bare);
    std::printf("  %-18s %5d %3d %6d %10zu %12zu %10.3f %10.3f %8.2f\n", c.schedule, c.p,
                schedule.v, c.m, schedule.num_actions(), program.num_instructions(), a, b, a / b);
    std::printf("  # pipette: %.0f simulated actions per wall second\n",
                schedule.num_actions() / a);
  }
  return 0;
}
