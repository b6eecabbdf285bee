#include "import/pytorch_trace_writer.h"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

namespace pipette::testing {
namespace {

using Json = nlohmann::ordered_json;

// The common clock's time 0, in nanoseconds since 1970 (late 2023), as Kineto's bases are.
constexpr std::int64_t kEpochNs = 1'700'000'000'000'000'000;

// One rank's trace as it is being written: times in seconds on the common clock.
class RankWriter {
 public:
  RankWriter(int rank, std::int64_t base_ns) : rank_(rank), base_ns_(base_ns) {}

  void Range(const std::string& name, const char* cat, double start, double end, int tid = 1) {
    events_.push_back({{"ph", "X"},
                       {"cat", cat},
                       {"name", name},
                       {"pid", 100 + rank_},
                       {"tid", tid},
                       {"ts", Us(start)},
                       {"dur", (end - start) * 1e6},
                       {"args", {{"External id", ++external_}}}});
    earliest_ = std::min(earliest_, start);
  }
  // A host launch at `time` of a kernel over [start, end] on `stream`.
  void Kernel(const std::string& name, double time, double start, double end, int stream) {
    const std::int64_t correlation = ++correlation_;
    events_.push_back({{"ph", "X"},
                       {"cat", "cuda_runtime"},
                       {"name", "cudaLaunchKernel"},
                       {"pid", 100 + rank_},
                       {"tid", 1},
                       {"ts", Us(time)},
                       {"dur", 0.5},
                       {"args", {{"correlation", correlation}, {"cbid", 211}}}});
    events_.push_back({{"ph", "s"},
                       {"id", correlation},
                       {"pid", 100 + rank_},
                       {"tid", 1},
                       {"ts", Us(time)},
                       {"cat", "ac2g"},
                       {"name", "ac2g"}});
    events_.push_back(
        {{"ph", "X"},
         {"cat", "kernel"},
         {"name", name},
         {"pid", 0},
         {"tid", stream},
         {"ts", Us(start)},
         {"dur", (end - start) * 1e6},
         {"args", {{"correlation", correlation}, {"stream", stream}, {"device", 0}}}});
    events_.push_back({{"ph", "f"},
                       {"id", correlation},
                       {"pid", 0},
                       {"tid", stream},
                       {"ts", Us(start)},
                       {"cat", "ac2g"},
                       {"name", "ac2g"},
                       {"bp", "e"}});
  }
  double earliest() const { return earliest_; }

  // Written with `later_ns` added to the base time: every moment that much later.
  void Write(const std::string& path, int global_rank, int world, bool distributed_info, bool gzip,
             std::int64_t later_ns = 0) const {
    Json doc = Json::object();
    doc["schemaVersion"] = 1;
    if (distributed_info) {
      doc["distributedInfo"] = {{"backend", "gloo"}, {"rank", global_rank}, {"world_size", world}};
    }
    doc["deviceProperties"] = Json::array();
    doc["traceEvents"] = events_;
    doc["traceName"] = path;
    doc["displayTimeUnit"] = "ms";
    doc["baseTimeNanoseconds"] = kEpochNs + base_ns_ + later_ns;
    const std::string text = doc.dump(1);
    if (gzip) {
      gzFile file = gzopen(path.c_str(), "wb");
      gzwrite(file, text.data(), static_cast<unsigned>(text.size()));
      gzclose(file);
    } else {
      std::ofstream(path) << text;
    }
  }

 private:
  double Us(double t) const { return t * 1e6 - static_cast<double>(base_ns_) / 1e3; }

  int rank_;
  std::int64_t base_ns_;
  Json events_ = Json::array();
  std::int64_t external_ = 0, correlation_ = 1000;
  double earliest_ = 1e300;
};

std::string NameOf(const Action& a, bool gpipe) {
  if (gpipe) {
    return (a.kind == ActionKind::kForward ? "Forward " : "Backward ") +
           std::to_string(a.microbatch);
  }
  std::string name = "PP:" + ToString(a);
  if (a.kind == ActionKind::kOverlapped) name += "OVERLAP_F_B";
  return name;
}

// Whether the receive `recv` brings what compute `c` consumes: a forward's input (`forward`) or a
// backward's output gradient.
bool Feeds(const Action& recv, const Action& c, bool forward) {
  const Action half =
      c.kind == ActionKind::kOverlapped ? (forward ? c.forward_half() : c.backward_half()) : c;
  const bool kind_matches =
      forward ? half.kind == ActionKind::kForward : IsInputBackward(half.kind);
  return kind_matches && half.stage == recv.stage && half.microbatch == recv.microbatch;
}

// GPipe's range of compute `e`: it opens where the host is, receives (a gloo:recv from 5 ns after
// the opening to the arrival), computes, and sends (a gloo:send 5 ns before the compute's end, so
// that it lies inside this range and not the next one, which may open right then).
void WriteGPipeRange(RankWriter& w, const TraceEvent& e, const std::vector<const TraceEvent*>& step,
                     double cursor) {
  const bool forward = e.action.kind == ActionKind::kForward;
  const TraceEvent* recv = nullptr;
  const TraceEvent* send = nullptr;
  for (const TraceEvent* other : step) {
    const Action& a = other->action;
    if (a.stage != e.action.stage || a.microbatch != e.action.microbatch) continue;
    if (a.kind == (forward ? ActionKind::kRecvForward : ActionKind::kRecvBackward)) recv = other;
    if (a.kind == (forward ? ActionKind::kSendForward : ActionKind::kSendBackward)) send = other;
  }
  const double start = std::min(cursor, e.start);
  double end = e.end;
  if (recv != nullptr) {
    w.Range("gloo:recv", "user_annotation", start + 5e-9, std::max(start + 5e-9, recv->end), 2);
  }
  if (send != nullptr) {
    w.Range("gloo:send", "user_annotation", send->start - 5e-9, send->end - 5e-9, 2);
    end = std::max(end, send->end);
  }
  w.Range(NameOf(e.action, true), "user_annotation", start, end);
}

// The ranges and kernels of one rank's instructions of one step, in the order they ran.
void WriteStep(RankWriter& w, std::vector<const TraceEvent*> step,
               const SyntheticTraceOptions& options) {
  std::sort(step.begin(), step.end(), [](const TraceEvent* a, const TraceEvent* b) {
    return a->start != b->start ? a->start < b->start : a->instr_id < b->instr_id;
  });
  double cursor = step.empty() ? 0 : step.front()->start;  // where the host is
  double posted = -1e300;                                  // the last communication's post
  for (std::size_t k = 0; k < step.size(); ++k) {
    const TraceEvent& e = *step[k];
    const ActionKind kind = e.action.kind;
    const bool recv = kind == ActionKind::kRecvForward || kind == ActionKind::kRecvBackward;
    const bool send = kind == ActionKind::kSendForward || kind == ActionKind::kSendBackward;
    if (options.gpipe && (recv || send)) continue;  // written inside their compute's range
    if (recv || send) {
      // Posted one after the other (10 ns apart), so each communication range starts inside the
      // range of the action that issued it.
      const double post = std::max(e.start, posted);
      posted = post + 1e-8;
      w.Range(NameOf(e.action, false), "user_annotation", post, post);
      if (options.device) {
        w.Kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", post, post,
                 std::max(post, e.end), 20);
      } else {
        w.Range(recv ? "gloo:recv" : "gloo:send", "user_annotation", post, std::max(post, e.end),
                2);
      }
      cursor = std::max(cursor, e.start);
      continue;
    }
    if (options.device) {
      const double launch = e.start - 2e-6;
      w.Range(NameOf(e.action, options.gpipe), "user_annotation", launch, launch + 1e-6);
      const double mid = (e.start + e.end) / 2;
      w.Kernel("ampere_sgemm_128x64_tn", launch + 0.2e-6, e.start, mid, 7);
      w.Kernel("elementwise_kernel", launch + 0.4e-6, mid, e.end, 7);
      w.Range(NameOf(e.action, options.gpipe), "gpu_user_annotation", e.start, e.end, 7);
    } else if (options.gpipe) {
      WriteGPipeRange(w, e, step, cursor);
    } else {
      // The range opens where the host is when the compute waited for its receive (the wait is
      // inside it), else when the compute started (an engine's dispatch lies between ranges).
      double arrival = -1e300;
      for (const TraceEvent* other : step) {
        const Action& a = other->action;
        const bool feeds = (a.kind == ActionKind::kRecvForward && Feeds(a, e.action, true)) ||
                           (a.kind == ActionKind::kRecvBackward && Feeds(a, e.action, false));
        if (feeds) arrival = std::max(arrival, other->end);
      }
      const double start = arrival >= e.start ? std::min(cursor, e.start) : e.start;
      w.Range(NameOf(e.action, false), "user_annotation", start, e.end);
    }
    cursor = std::max(cursor, e.end);
  }
}

}  // namespace

SyntheticTraces WriteSyntheticTraces(const Program& program, const std::vector<TraceEvent>& trace,
                                     const std::vector<AllReduceEvent>& updates,
                                     const std::string& dir, const SyntheticTraceOptions& options) {
  SyntheticTraces out;
  out.origin = 1e300;
  for (int r = 0; r < program.p; ++r) {
    const std::int64_t base = r < static_cast<int>(options.base_ns.size()) ? options.base_ns[r] : 0;
    RankWriter w(r, base);
    std::map<int, std::vector<const TraceEvent*>> steps;
    for (const TraceEvent& e : trace) {
      if (e.rank == r) steps[e.step].push_back(&e);
    }
    for (const auto& [step, events] : steps) {
      double first = 1e300, last = -1e300;
      for (const TraceEvent* e : events) {
        first = std::min(first, e->start - (options.device ? 2e-6 : 0));
        last = std::max(last, e->end);
      }
      for (const AllReduceEvent& u : updates) {
        if (u.rank == r && u.step == step) {
          w.Range("Optimizer.step#AdamW.step", "user_annotation", u.start, u.end);
          last = std::max(last, u.end);
        }
      }
      if (options.profiler_steps) {
        w.Range("ProfilerStep#" + std::to_string(step + 3), "user_annotation", first, last);
      }
      WriteStep(w, events, options);
    }
    for (int d = 0; d < options.dp; ++d) {  // replicas: the same trace, pp the outer dimension
      const int global = r * options.dp + d;
      const std::string path =
          (std::filesystem::path(dir) / (options.prefix + "-rank" + std::to_string(global) +
                                         (options.gzip ? ".json.gz" : ".json")))
              .string();
      w.Write(path, global, program.p * options.dp, options.distributed_info, options.gzip,
              d * options.replica_delay_ns);
      out.paths.push_back(path);
    }
    out.origin = std::min(out.origin, w.earliest());
  }
  return out;
}

}  // namespace pipette::testing
