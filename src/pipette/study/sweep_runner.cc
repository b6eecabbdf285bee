#include "pipette/study/sweep_runner.h"

#include <fmt/core.h>
#include <poll.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "pipette/common/exit_code.h"

namespace pipette {

std::string LastLine(const std::string& text) {
  const std::size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return "";
  const std::size_t newline = text.rfind('\n', end);
  const std::size_t begin = newline == std::string::npos ? 0 : newline + 1;
  return text.substr(begin, end + 1 - begin);
}

PointResult ClassifyPoint(const std::string& out, const std::string& err, const ExitStatus& exit,
                          double seconds) {
  PointResult result;
  result.seconds = seconds;
  if (exit.code == kExitOk) {
    const auto json = nlohmann::json::parse(LastLine(out), nullptr, false);
    if (json.is_object() && json.contains("held_by_run") &&
        json["held_by_run"].is_number_integer() && json.contains("held_status") &&
        json["held_status"].is_string()) {
      result.outcome = PointResult::Outcome::kHeld;
      result.run_id = json["held_by_run"].get<std::int64_t>();
      result.status = json["held_status"].get<std::string>();
      return result;
    }
    if (json.is_object() && json.contains("run_id") && json["run_id"].is_number_integer() &&
        json.contains("status") && json["status"].is_string()) {
      result.outcome = PointResult::Outcome::kRan;
      result.run_id = json["run_id"].get<std::int64_t>();
      result.status = json["status"].get<std::string>();
      return result;
    }
    result.message = "exit 0 without a run id in its JSON output: " + LastLine(out);
    return result;
  }
  const std::string why = LastLine(err);
  if (exit.code == kExitBadInput) {
    result.outcome = PointResult::Outcome::kInvalid;
    result.message = why;
    return result;
  }
  result.message = exit.Describe() + (why.empty() ? "" : ": " + why);
  return result;
}

std::vector<PointResult> RunChildren(
    const std::vector<ChildCommand>& commands, int jobs,
    const std::function<void(std::size_t, const PointResult&)>& on_finished,
    const std::function<void()>& on_tick) {
  using Clock = std::chrono::steady_clock;
  struct Job {
    std::size_t slot;  // index into commands
    Subprocess child;
    Clock::time_point start;
  };
  std::vector<PointResult> results(commands.size());
  std::vector<std::unique_ptr<Job>> running;
  std::size_t next = 0;
  while (next < commands.size() || !running.empty()) {
    while (running.size() < static_cast<std::size_t>(jobs) && next < commands.size()) {
      const std::size_t slot = next++;
      Result<Subprocess> child = Subprocess::Start(commands[slot].program, commands[slot].argv);
      if (!child.ok()) {
        results[slot].message = child.status().message();
        on_finished(slot, results[slot]);
        continue;
      }
      running.push_back(std::make_unique<Job>(Job{slot, std::move(*child), Clock::now()}));
    }
    std::vector<pollfd> fds;
    std::vector<Job*> owner;
    for (const auto& job : running) {
      for (const pollfd& fd : job->child.PollFds()) {
        fds.push_back(fd);
        owner.push_back(job.get());
      }
    }
    if (!fds.empty()) {
      const int ready = ::poll(fds.data(), fds.size(), 1000);  // wake each second for the ETA
      if (ready < 0 && errno != EINTR) {
        fmt::print(stderr, "pipette sweep: poll: {}\n", std::strerror(errno));
        break;  // the Jobs' destructors kill and reap the children
      }
      for (std::size_t k = 0; k < fds.size(); ++k) {
        if (fds[k].revents != 0) owner[k]->child.Transfer(fds[k].fd);
      }
    }
    for (auto it = running.begin(); it != running.end();) {
      Job& job = **it;
      if (!job.child.done()) {
        ++it;
        continue;
      }
      const ExitStatus exit = job.child.Wait();
      results[job.slot] =
          ClassifyPoint(job.child.out(), job.child.err(), exit,
                        std::chrono::duration<double>(Clock::now() - job.start).count());
      on_finished(job.slot, results[job.slot]);
      it = running.erase(it);
    }
    on_tick();
  }
  return results;
}

}  // namespace pipette
